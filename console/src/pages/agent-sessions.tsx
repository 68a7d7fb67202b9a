import { Fragment } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { api, messageOf } from '../api.js';
import { formatBytes } from '../bytes.js';
import { ConfirmButton } from '../confirm-button.js';
import { Outcome } from '../outcome.js';
import { Pager } from '../pager.js';
import type { SessionList, SessionSummary, SessionWithMessages } from '../types.js';
import { useCanWrite } from '../use-can-write.js';

const PAGE_SIZE = 20;

const When = ({ at }: { at: string }) => <time dateTime={at}>{new Date(at).toLocaleString()}</time>;

/** A chat message as the default runtime stores it (`{role, content}` with text content), told apart from any other JSON. */
const isChatMessage = (message: unknown): message is { role: string; content: string } =>
  typeof message === 'object' && message !== null && typeof (message as { role?: unknown }).role === 'string' && typeof (message as { content?: unknown }).content === 'string';

/** One session's messages, oldest first: a chat message as its role and text, anything else as the JSON it is (messages are opaque to the platform). */
function Messages({ session }: { session: SessionWithMessages }) {
  if (session.messages.length === 0) return <p>No messages.</p>;
  return (
    <ol class="session-messages" aria-label={`Conversation of session ${session.session_id}`}>
      {session.messages.map((message, index) => (
        <li key={index}>{isChatMessage(message) ? <><strong>{message.role}:</strong> {message.content}</> : <pre>{JSON.stringify(message, null, 2)}</pre>}</li>
      ))}
    </ol>
  );
}

/**
 * The conversations the agent's replicas keep (issue 37), most recently used first: their
 * size and use. A writer may open one session's messages (the API audits each read) and
 * delete one after confirming; a viewer, whom the API refuses both, sees neither button.
 */
export function SessionsTab({ agentId }: { agentId: string }) {
  const path = `/agents/${agentId}/sessions`;
  const canWrite = useCanWrite();
  const [page, setPage] = useState(1);
  const [list, setList] = useState<SessionList | null>(null);
  const [error, setError] = useState('');
  const [done, setDone] = useState('');
  const [busy, setBusy] = useState(false);
  /** The session whose messages are open below its row, read when opened: one at a time, closed by a change of page. */
  const [open, setOpen] = useState<SessionWithMessages | null>(null);

  const load = () =>
    api<SessionList>('GET', `${path}?page=${page}&page_size=${PAGE_SIZE}`).then((answer) => {
      // The last session of a later page deleted: the page before it is the one to show.
      if (answer.sessions.length === 0 && page > 1) return setPage(page - 1);
      setList(answer);
      setError('');
    }, (caught) => setError(messageOf(caught)));
  useEffect(() => { void load(); }, [path, page]);

  const toggleMessages = async (session: SessionSummary) => {
    setDone('');
    if (open?.session_id === session.session_id) return setOpen(null);
    setBusy(true);
    const shown = await api<SessionWithMessages>('GET', `${path}/${encodeURIComponent(session.session_id)}`).then((answer) => answer, (caught) => {
      setError(messageOf(caught));
      return null;
    });
    setBusy(false);
    if (shown) setError('');
    setOpen(shown);
  };

  const remove = async (session: SessionSummary) => {
    setDone('');
    setBusy(true);
    const refusal = await api('DELETE', `${path}/${encodeURIComponent(session.session_id)}`).then(() => '', messageOf);
    // Read again either way: a 404 means the session expired or went meanwhile, and its row should go too.
    await load();
    if (open?.session_id === session.session_id) setOpen(null);
    setBusy(false);
    if (refusal) setError(refusal);
    else setDone(`Session ${session.session_id} deleted.`);
  };

  // Drawn once the role is known too: a row never gains or loses its buttons under the pointer.
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
                <Fragment key={session.session_id}>
                  <tr>
                    <td class="url">{session.session_id}</td>
                    <td>{session.message_count}</td>
                    <td>{formatBytes(session.size_bytes)}</td>
                    <td><When at={session.last_used_at} /></td>
                    <td><When at={session.expires_at} /></td>
                    <td>
                      {canWrite && (
                        <>
                          <button type="button" aria-expanded={open?.session_id === session.session_id} aria-label={`Messages of session ${session.session_id}`} disabled={busy} onClick={() => void toggleMessages(session)}>Messages</button>{' '}
                          <ConfirmButton label="Delete" name={`Delete session ${session.session_id}`} groupLabel={`Confirm deleting session ${session.session_id}`} yes="Yes, delete" no="Keep it" danger disabled={busy}
                            question={<>Delete session {session.session_id} and its {session.message_count} message{session.message_count === 1 ? '' : 's'}? A caller who sends its id again starts a new conversation.</>}
                            onConfirm={() => void remove(session)} />
                        </>
                      )}
                    </td>
                  </tr>
                  {open?.session_id === session.session_id && <tr><td colSpan={6}><Messages session={open} /></td></tr>}
                </Fragment>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {(list.page > 1 || list.has_next) && <Pager page={list.page} pageSize={PAGE_SIZE} total={list.total} hasNext={list.has_next} onPage={(next) => { setOpen(null); setPage(next); }} />}
    </div>
  );
}
