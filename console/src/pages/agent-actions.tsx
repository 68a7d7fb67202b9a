import { useState } from 'preact/hooks';
import { api, messageOf } from '../api.js';
import { navigate } from '../router.js';
import type { Agent } from '../types.js';

/** Deploy, scale, delete (after confirmation), access and rate limit; each failure shown here with the API's message. */
export function AgentActions({ agent, onChange }: { agent: Agent; onChange: (agent: Agent) => void }) {
  const [error, setError] = useState('');
  const [confirming, setConfirming] = useState(false);

  const act = async (work: () => Promise<void>) => {
    setError('');
    try {
      await work();
    } catch (caught) {
      setError(messageOf(caught));
    }
  };
  const reload = async () => onChange(await api<Agent>('GET', `/agents/${agent.id}`));
  const scale = (direction: 'up' | 'down') => act(async () => { await api('POST', `/agents/${agent.id}/scale`, { direction, count: 1 }); await reload(); });
  const patch = (body: Record<string, unknown>) => act(async () => onChange(await api<Agent>('PATCH', `/agents/${agent.id}`, body)));

  return (
    <div class="actions">
      <button type="button" onClick={() => act(async () => onChange(await api<Agent>('POST', `/agents/${agent.id}/deploy`, {})))}>Deploy</button>
      <button type="button" onClick={() => scale('up')}>Scale up</button>
      <button type="button" onClick={() => scale('down')}>Scale down</button>
      <label class="field inline">
        <span>Access</span>
        <select value={agent.access} onChange={(event) => patch({ access: event.currentTarget.value })}>
          <option value="public">public</option>
          <option value="private">private</option>
        </select>
      </label>
      <form class="inline" onSubmit={(event) => {
        event.preventDefault();
        const value = String(new FormData(event.currentTarget).get('rate_limit_rpm') ?? '').trim();
        void patch({ rate_limit_rpm: value ? Number(value) : null });
      }}>
        <label class="field inline"><span>Rate limit (requests/min)</span><input name="rate_limit_rpm" type="number" min={1} placeholder="plan default" value={agent.rate_limit_rpm ?? ''} /></label>
        <button type="submit">Set rate limit</button>
      </form>
      {!confirming && <button type="button" class="danger" onClick={() => setConfirming(true)}>Delete</button>}
      {confirming && (
        <span role="group" aria-label="Confirm delete">
          Delete {agent.name} and stop its replicas?{' '}
          <button type="button" class="danger" onClick={() => act(async () => { await api('DELETE', `/agents/${agent.id}`); navigate('/agents'); })}>Yes, delete</button>
          <button type="button" onClick={() => setConfirming(false)}>Keep it</button>
        </span>
      )}
      {error && <p role="alert" class="error">{error}</p>}
    </div>
  );
}
