import { useEffect, useState } from 'preact/hooks';
import { api, messageOf } from '../api.js';

interface Deployment {
  id: string;
  number: number;
  status: string;
  image: string;
  model: string;
  rollback_of: string | null;
  created_at: string;
}

/** The agent's deployment history, newest first, each a target for rollback. */
export function DeploymentsTab({ agentId }: { agentId: string }) {
  const [deployments, setDeployments] = useState<Deployment[]>([]);
  const [error, setError] = useState('');
  const load = () => api<{ deployments: Deployment[] }>('GET', `/agents/${agentId}/deployments?page_size=50`).then((answer) => setDeployments(answer.deployments), (caught) => setError(messageOf(caught)));
  useEffect(() => { void load(); }, [agentId]);

  const rollback = async (target: Deployment) => {
    setError('');
    try {
      await api('POST', `/agents/${agentId}/rollback`, { deployment_id: target.id });
      await load();
    } catch (caught) {
      setError(messageOf(caught));
    }
  };

  return (
    <div>
      {error && <p role="alert" class="error">{error}</p>}
      <div class="table-scroll">
        <table>
          <thead><tr><th scope="col">#</th><th scope="col">Status</th><th scope="col">Image</th><th scope="col">Model</th><th scope="col">Created</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
          <tbody>
            {deployments.map((deployment, index) => (
              <tr key={deployment.id}>
                <td>{deployment.number}</td>
                <td>{deployment.status}</td>
                <td class="url">{deployment.image}</td>
                <td>{deployment.model}</td>
                <td><time dateTime={deployment.created_at}>{new Date(deployment.created_at).toLocaleString()}</time></td>
                <td>{index > 0 && <button type="button" aria-label={`Roll back to deployment ${deployment.number}`} onClick={() => rollback(deployment)}>Roll back</button>}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </div>
  );
}
