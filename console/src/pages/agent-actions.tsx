import { useEffect, useRef, useState } from 'preact/hooks';
import type { ComponentChildren } from 'preact';
import { api, messageOf } from '../api.js';
import { navigate } from '../router.js';
import type { Agent } from '../types.js';
import { AutoScaleForm, autoScaleKey } from './agent-auto-scale.js';

type Action = 'deploy' | 'scale' | 'access' | 'rate' | 'autoscale' | 'delete';

/**
 * Deploy, scale, access, rate limit, auto-scaling and delete (after confirmation). A failure
 * is shown in the group of the control that was used, with the API's message.
 */
export function AgentActions({ agent, onChange }: { agent: Agent; onChange: (agent: Agent) => void }) {
  const [failed, setFailed] = useState<{ action: Action; message: string } | null>(null);
  const [confirming, setConfirming] = useState(false);
  // The keyboard follows the question: to its safe answer when asked, back to Delete when kept.
  const keep = useRef<HTMLButtonElement>(null);
  const remove = useRef<HTMLButtonElement>(null);
  const asked = useRef(false);
  useEffect(() => {
    if (confirming) keep.current?.focus();
    else if (asked.current) remove.current?.focus();
    asked.current = confirming;
  }, [confirming]);

  const act = async (action: Action, work: () => Promise<void>) => {
    setFailed(null);
    try {
      await work();
    } catch (caught) {
      setFailed({ action, message: messageOf(caught) });
    }
  };
  const reload = async () => onChange(await api<Agent>('GET', `/agents/${agent.id}`));
  const scale = (direction: 'up' | 'down') => act('scale', async () => { await api('POST', `/agents/${agent.id}/scale`, { direction, count: 1 }); await reload(); });
  const deploy = (action: Action, body: Record<string, unknown>) => act(action, async () => onChange(await api<Agent>('POST', `/agents/${agent.id}/deploy`, body)));
  const patch = (action: Action, body: Record<string, unknown>) => act(action, async () => onChange(await api<Agent>('PATCH', `/agents/${agent.id}`, body)));
  const problem = (action: Action) => (failed?.action === action ? <p role="alert" class="error">{failed.message}</p> : null);

  return (
    <div class="actions">
      <Group name="Deploy" problem={problem('deploy')}>
        <button type="button" onClick={() => deploy('deploy', {})}>Deploy</button>
      </Group>
      <Group name="Scale" problem={problem('scale')}>
        <button type="button" onClick={() => scale('up')}>Scale up</button>
        <button type="button" onClick={() => scale('down')}>Scale down</button>
      </Group>
      <Group name="Access" problem={problem('access')}>
        <label class="field inline">
          <span>Access</span>
          <select value={agent.access} onChange={(event) => patch('access', { access: event.currentTarget.value })}>
            <option value="public">public</option>
            <option value="private">private</option>
          </select>
        </label>
      </Group>
      <Group name="Rate limit" problem={problem('rate')}>
        {/* Uncontrolled, keyed by the saved value: the page's refresh never undoes what is being typed. */}
        <form class="inline" onSubmit={(event) => {
          event.preventDefault();
          const value = String(new FormData(event.currentTarget).get('rate_limit_rpm') ?? '').trim();
          void patch('rate', { rate_limit_rpm: value ? Number(value) : null });
        }}>
          <label class="field inline"><span>Rate limit (requests/min)</span><input key={agent.rate_limit_rpm ?? 'default'} name="rate_limit_rpm" type="number" min={1} placeholder="plan default" defaultValue={String(agent.rate_limit_rpm ?? '')} /></label>
          <button type="submit">Set rate limit</button>
        </form>
      </Group>
      <Group name="Auto-scaling" problem={problem('autoscale')} wide>
        <AutoScaleForm key={autoScaleKey(agent.deploy)} saved={agent.deploy} onSave={(input) => deploy('autoscale', input)} />
      </Group>
      <Group name="Delete" problem={problem('delete')}>
        {!confirming && <button type="button" class="danger" ref={remove} onClick={() => setConfirming(true)}>Delete</button>}
        {confirming && (
          <span role="group" aria-label="Confirm delete">
            Delete {agent.name} and stop its replicas?{' '}
            <button type="button" class="danger" onClick={() => act('delete', async () => { await api('DELETE', `/agents/${agent.id}`); navigate('/agents'); })}>Yes, delete</button>
            <button type="button" ref={keep} onClick={() => setConfirming(false)}>Keep it</button>
          </span>
        )}
      </Group>
    </div>
  );
}

/** One action's controls and, below them, its failure; a wide one (a form of several fields) has a row of its own. */
function Group({ name, problem, wide = false, children }: { name: string; problem: ComponentChildren; wide?: boolean; children: ComponentChildren }) {
  return (
    <div class={wide ? 'action wide' : 'action'} role="group" aria-label={name}>
      <div class="action-controls">{children}</div>
      {problem}
    </div>
  );
}
