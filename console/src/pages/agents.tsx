import { useEffect, useState } from 'preact/hooks';
import { api, messageOf } from '../api.js';
import { Pager } from '../pager.js';
import { navigate, onLinkClick } from '../router.js';
import { StatusBadge } from '../status.js';
import { AGENT_STATUSES, type Agent } from '../types.js';
import { useCanWrite } from '../use-can-write.js';

interface AgentList {
  agents: Agent[];
  total: number;
  page: number;
  has_next: boolean;
}

const PAGE_SIZE = 20;

/** The account's agents, filtered by status and tag, a page at a time. */
export function AgentsPage() {
  const [status, setStatus] = useState('');
  const [tag, setTag] = useState('');
  const canWrite = useCanWrite();
  const [page, setPage] = useState(1);
  const [list, setList] = useState<AgentList | null>(null);
  const [error, setError] = useState('');

  useEffect(() => {
    const query = new URLSearchParams({ page: String(page), page_size: String(PAGE_SIZE), ...(status ? { status } : {}), ...(tag ? { tag } : {}) });
    api<AgentList>('GET', `/agents?${query}`).then((answer) => { setList(answer); setError(''); }, (caught) => setError(messageOf(caught)));
  }, [status, tag, page]);

  return (
    <section>
      <div class="title-row">
        <h1>Agents</h1>
        {canWrite && <button type="button" onClick={() => navigate('/agents/new')}>New agent</button>}
      </div>
      <div class="filters">
        <label class="field">
          <span>Status</span>
          <select value={status} onChange={(event) => { setStatus(event.currentTarget.value); setPage(1); }}>
            <option value="">Any</option>
            {AGENT_STATUSES.map((value) => <option value={value}>{value}</option>)}
          </select>
        </label>
        <label class="field">
          <span>Tag</span>
          <input value={tag} onChange={(event) => { setTag(event.currentTarget.value.trim()); setPage(1); }} />
        </label>
      </div>
      {error && <p role="alert" class="error">{error}</p>}
      {list && list.agents.length === 0 && <p>No agents{status || tag ? ' match these filters' : ' yet'}.</p>}
      {list && list.agents.length > 0 && (
        <div class="table-scroll">
          <table>
            <thead><tr><th scope="col">Name</th><th scope="col">Status</th><th scope="col">Replicas</th><th scope="col">URL</th><th scope="col">Updated</th></tr></thead>
            <tbody>
              {list.agents.map((agent) => (
                <tr key={agent.id}>
                  <td><a href={`/agents/${agent.id}`} onClick={onLinkClick}>{agent.name}</a></td>
                  <td><StatusBadge status={agent.status} /></td>
                  <td>{agent.replicas}</td>
                  <td class="url">{agent.url}</td>
                  <td><time dateTime={agent.updated_at}>{new Date(agent.updated_at).toLocaleString()}</time></td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {list && <Pager page={list.page} pageSize={PAGE_SIZE} total={list.total} hasNext={list.has_next} onPage={setPage} />}
    </section>
  );
}
