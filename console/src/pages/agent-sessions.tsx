import { useEffect, useState } from 'preact/hooks';
import { api, messageOf } from '../api.js';
import { formatBytes } from '../bytes.js';
import { ConfirmButton } from '../confirm-button.js';
import { Outcome } from '../outcome.js';
import { Pager } from '../pager.js';
import type { SessionList, SessionSummary } from '../types.js';
import { useCanWrite } from '../use-can-write.js';

const PAGE_SIZE = 20;

const When = ({ at }: { at: string }) => <time dateTime={at}>{new Date(at).toLocaleString()}</time>;

/**
 * The conversations the agent's replicas keep (issue 37), most recently used first: their
 * size and use, never their messages. A writer may delete one after confirming; a viewer
 * sees no Delete.
 */
export function SessionsTab({ agentId }: { agentId: string }) {
  const path = `/agents/${agentId}/sessions`;
  const canWrite = useCanWrite();
  const [page, setPage] = useState(1);
  const [list, setList] = useState<SessionList | null>(null);
  const [error, setError] = useState('');
  const [done, setDone] = useState('');
  const [busy, setBusy] = useState(false);

  const load = () =>
    api<SessionList>('GET', `${path}?page=${page}&page_size=${PAGE_SIZE}`).then((answer) => {
      // The last session of a later page deleted: the page before it is the one to show.
      if (answer.sessions.length === 0 && page > 1) return setPage(page - 1);
      setList(answer);
      setError('');
    }, (caught) => setError(messageOf(caught)));
  useEffect(() => { void load(); }, [path, page]);

  const remove = async (session: SessionSummary) => {
    setDone('');
    setBusy(true);
    const refusal = await api('DELETE', `${path}/${encodeURIComponent(session.session_id)}`).then(() => '', messageOf);
    // Read again either way: a 404 means the session expired or went meanwhile, and its row should go too.
    await load();
    setBusy(false);
    if (refusal) setError(refusal);
    else setDone(`Session ${session.session_id} deleted.`);
  };

  // Drawn once the role is known too: a row never gains or loses its Delete under the pointer.
  if (!list || canWrite === null) return <div>{error ? <p role="alert" class="error">{error}</p> : <p>Loading…</p>}</div>;
  return (
    <div>
      <Outcome error={error} done={done} />
      {list.total === 0 ? <p>No sessions yet: the agent keeps a conversation here when a caller sends a session_id back.</p> : (
        <div class="table-scroll">
          <table aria-label="Sessions">
            <thead><tr><th scope="col">Session</th><th scope="col">Messages</th><th scope="col">Size</th><th scope="col">Last used</th><th scope="col">Expires</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
            <tbody>
              {list.sessions.map((session) => (
                <tr key={session.session_id}>
                  <td class="url">{session.session_id}</td>
                  <td>{session.message_count}</td>
                  <td>{formatBytes(session.size_bytes)}</td>
                  <td><When at={session.last_used_at} /></td>
                  <td><When at={session.expires_at} /></td>
                  <td>
                    {canWrite && (
                      <ConfirmButton label="Delete" name={`Delete session ${session.session_id}`} groupLabel={`Confirm deleting session ${session.session_id}`} yes="Yes, delete" no="Keep it" danger disabled={busy}
                        question={<>Delete session {session.session_id} and its {session.message_count} message{session.message_count === 1 ? '' : 's'}? A caller who sends its id again starts a new conversation.</>}
                        onConfirm={() => void remove(session)} />
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {(list.page > 1 || list.has_next) && <Pager page={list.page} pageSize={PAGE_SIZE} total={list.total} hasNext={list.has_next} onPage={setPage} />}
    </div>
  );
}
