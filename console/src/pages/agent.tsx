import { useEffect, useState } from 'preact/hooks';
import { api, messageOf } from '../api.js';
import { CopyButton } from '../copy-button.js';
import { StatusBadge } from '../status.js';
import { TabList } from '../tab-list.js';
import type { Agent } from '../types.js';
import { AgentActions } from './agent-actions.js';
import { AccessKeysTab } from './agent-keys.js';
import { DeploymentsTab } from './agent-deployments.js';
import { DomainsTab } from './agent-domains.js';
import { InvocationsTab } from './agent-invocations.js';
import { LogsTab } from './agent-logs.js';
import { MetricsTab } from './agent-metrics.js';
import { RolloutProgress } from './rollout-progress.js';
import { SessionsTab } from './agent-sessions.js';
import { TryItTab } from './agent-try.js';

const TABS = ['Logs', 'Metrics', 'Access keys', 'Domains', 'Sessions', 'Invocations', 'Deployments', 'Try it'] as const;
type Tab = (typeof TABS)[number];
const REFRESH_MS = 2000;

/** One agent: its status (refreshed), rollout, actions and tabs. */
export function AgentPage({ id }: { id: string }) {
  const [agent, setAgent] = useState<Agent | null>(null);
  const [error, setError] = useState('');
  const [tab, setTab] = useState<Tab>('Logs');

  useEffect(() => {
    let stopped = false;
    const load = () => api<Agent>('GET', `/agents/${id}`).then((answer) => { if (!stopped) { setAgent(answer); setError(''); } }, (caught) => !stopped && setError(messageOf(caught)));
    void load();
    const timer = setInterval(load, REFRESH_MS);
    return () => { stopped = true; clearInterval(timer); };
  }, [id]);

  if (!agent) return <section>{error ? <p role="alert" class="error">{error}</p> : <p>Loading…</p>}</section>;
  return (
    <section>
      <div class="title-row">
        <h1>{agent.name}</h1>
        <StatusBadge status={agent.status} />
      </div>
      {error && <p role="alert" class="error">{error}</p>}
      {agent.error && <p class="error">{agent.error}</p>}
      <p class="url-row"><span class="url" id="agent-url">{agent.url}</span> <CopyButton text={agent.url} label="Copy the agent's URL" /></p>
      <p>
        {agent.replicas} replica{agent.replicas === 1 ? '' : 's'}
        {agent.status === 'running' && agent.replicas === 0 ? ' (parked: the next request wakes it)' : ''} · {agent.access} · model {agent.model} ·{' '}
        {agent.rate_limit_rpm === null ? 'default rate limit' : `rate limit ${agent.rate_limit_rpm}/min per caller`}
      </p>
      <RolloutProgress agentId={agent.id} version={agent.version} />
      <AgentActions agent={agent} onChange={setAgent} />
      <TabList label="Agent views" names={TABS} selected={tab} panelId="agent-view" onSelect={setTab} />
      <div role="tabpanel" id="agent-view" aria-label={tab}>
        {tab === 'Logs' && <LogsTab agentId={agent.id} />}
        {tab === 'Metrics' && <MetricsTab agentId={agent.id} />}
        {tab === 'Access keys' && <AccessKeysTab agentId={agent.id} />}
        {tab === 'Domains' && <DomainsTab agentId={agent.id} />}
        {tab === 'Sessions' && <SessionsTab agentId={agent.id} />}
        {tab === 'Invocations' && <InvocationsTab agentId={agent.id} />}
        {tab === 'Deployments' && <DeploymentsTab agentId={agent.id} />}
        {tab === 'Try it' && <TryItTab agent={agent} />}
      </div>
    </section>
  );
}
