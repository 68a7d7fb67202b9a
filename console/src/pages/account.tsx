import { useEffect, useState } from 'preact/hooks';
import { api, messageOf } from '../api.js';
import { KeysPanel } from '../keys-panel.js';
import type { AccountUsage } from '../types.js';

/** Usage against the plan's limits, the plan, and the personal API keys. */
export function AccountPage() {
  const [usage, setUsage] = useState<AccountUsage | null>(null);
  const [error, setError] = useState('');
  useEffect(() => {
    api<AccountUsage>('GET', '/account/usage').then(setUsage, (caught) => setError(messageOf(caught)));
  }, []);

  return (
    <section>
      <h1>Account</h1>
      {error && <p role="alert" class="error">{error}</p>}
      {usage && (
        <>
          <p>Plan: <strong>{usage.plan}</strong>{usage.exempt ? ' (exempt from limits)' : ''}</p>
          <UsageBar label="Agents" used={usage.usage.agents} limit={usage.limits.max_agents} />
          <UsageBar label="Replicas" used={usage.usage.replicas} limit={usage.limits.max_replicas} />
          <UsageBar label="vCPU" used={usage.usage.vcpu} limit={usage.limits.max_vcpu} />
          <UsageBar label="Memory (MiB)" used={usage.usage.memory_mb} limit={usage.limits.max_memory_mb} />
          <p class="note">
            Since {new Date(usage.period.start).toLocaleDateString()}: {usage.period.requests} requests, {usage.period.replica_hours.toFixed(2)} replica-hours,{' '}
            {usage.period.vcpu_hours.toFixed(2)} vCPU-hours, {usage.period.memory_gb_hours.toFixed(2)} GB-hours.
          </p>
        </>
      )}
      <h2>Personal API keys</h2>
      <KeysPanel path="/api-keys" listField="api_keys" noun="API key" />
    </section>
  );
}

function UsageBar({ label, used, limit }: { label: string; used: number; limit: number }) {
  return (
    <div class="usage">
      <label>
        <span>{label}: {used} of {limit}</span>
        <meter min={0} max={limit} value={used} high={limit * 0.8} optimum={0} />
      </label>
    </div>
  );
}
