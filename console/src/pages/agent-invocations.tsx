import { useEffect, useState } from 'preact/hooks';
import { api, messageOf } from '../api.js';
import { formatCost, formatMs, InvocationStatus, invocationTokens, When } from '../invocation-figures.js';
import { Pager } from '../pager.js';
import { INVOCATION_STATUSES, type InvocationList, type InvocationSummary } from '../types.js';
import { InvocationView } from './invocation-view.js';

const PAGE_SIZE = 20;

/** The button that opens an invocation, found again to take the focus back to it. */
const openerId = (invocationId: string) => `invocation-${invocationId}`;

/**
 * The invokes the agent's replicas traced (issue 38), newest first, filtered by status and
 * session; a row's time opens that invocation with its spans as a waterfall. The list stays
 * mounted (hidden) while one is open, so Back finds its page, filters and row as they were.
 */
export function InvocationsTab({ agentId }: { agentId: string }) {
  const [status, setStatus] = useState('');
  const [session, setSession] = useState('');
  const [page, setPage] = useState(1);
  const [list, setList] = useState<InvocationList | null>(null);
  const [error, setError] = useState('');
  const [open, setOpen] = useState<string | null>(null);

  useEffect(() => {
    // A filter changed twice quickly: only the last read may fill the table.
    let current = true;
    const query = new URLSearchParams({ page: String(page), page_size: String(PAGE_SIZE), ...(status ? { status } : {}), ...(session ? { session_id: session } : {}) });
    api<InvocationList>('GET', `/agents/${agentId}/invocations?${query}`).then(
      (answer) => { if (current) { setList(answer); setError(''); } },
      (caught) => current && setError(messageOf(caught)),
    );
    return () => { current = false; };
  }, [agentId, status, session, page]);

  const close = () => {
    const opener = open;
    setOpen(null);
    // After the list is shown again: a hidden button takes no focus.
    if (opener) requestAnimationFrame(() => document.getElementById(openerId(opener))?.focus());
  };

  return (
    <div>
      {open && <InvocationView agentId={agentId} invocationId={open} onBack={close} />}
      <div hidden={open !== null}>
        <div class="filters">
          <label class="field">
            <span>Status</span>
            <select value={status} onChange={(event) => { setStatus(event.currentTarget.value); setPage(1); }}>
              <option value="">Any</option>
              {INVOCATION_STATUSES.map((value) => <option value={value}>{value}</option>)}
            </select>
          </label>
          <label class="field">
            <span>Session id</span>
            <input value={session} onChange={(event) => { setSession(event.currentTarget.value.trim()); setPage(1); }} />
          </label>
        </div>
        {error && <p role="alert" class="error">{error}</p>}
        {!list ? (!error && <p>Loading…</p>) : list.total === 0 ? <EmptyState filtered={status !== '' || session !== ''} /> : (
          <div class="table-scroll">
            <table aria-label="Invocations">
              <thead>
                <tr><th scope="col">Started</th><th scope="col">Status</th><th scope="col">Took</th><th scope="col">Models</th><th scope="col">Tokens</th><th scope="col">Cost</th><th scope="col">Tool calls</th><th scope="col">Session</th></tr>
              </thead>
              <tbody>{list.invocations.map((invocation) => <InvocationRow key={invocation.invocation_id} invocation={invocation} onOpen={() => setOpen(invocation.invocation_id)} />)}</tbody>
            </table>
          </div>
        )}
        {list && (list.page > 1 || list.has_next) && <Pager page={list.page} pageSize={PAGE_SIZE} total={list.total} hasNext={list.has_next} onPage={setPage} />}
      </div>
    </div>
  );
}

function InvocationRow({ invocation, onOpen }: { invocation: InvocationSummary; onOpen: () => void }) {
  return (
    <tr data-invocation={invocation.invocation_id}>
      <td>
        <button type="button" class="link" id={openerId(invocation.invocation_id)} onClick={onOpen}>
          <When at={invocation.started_at} /><span class="visually-hidden">: show invocation {invocation.invocation_id}</span>
        </button>
      </td>
      <td><InvocationStatus status={invocation.status} /></td>
      <td>{formatMs(invocation.duration_ms)}</td>
      <td>{invocation.models.join(', ')}</td>
      <td>{invocationTokens(invocation)}</td>
      <td>{formatCost(invocation.cost_usd)}</td>
      <td>{invocation.tool_calls}</td>
      <td class="url">{invocation.session_id ?? ''}</td>
    </tr>
  );
}

const EmptyState = ({ filtered }: { filtered: boolean }) =>
  filtered ? <p>No invocations match these filters.</p> : (
    <p>
      No invocations yet: the default runtime records a trace of every invoke (its model calls, tool calls, tokens and
      cost) and sends it here; an image of your own can send its spans as OTLP to the agent services' <code>/v1/traces</code>.
    </p>
  );
