import { useEffect, useState } from 'preact/hooks';
import { api, messageOf } from '../api.js';
import { Outcome } from '../outcome.js';
import type { Deployment, DeploymentList } from '../types.js';
import { CanaryPanel, isServingCanary, StrategyBadge } from './canary-panel.js';

/** While a canary deployment is in progress (starting, serving, promoted and rolling out), it is read again this often. */
const CANARY_POLL_MS = 5000;

/** The agent's deployment history, newest first, each a target for rollback; a running canary's panel above it. */
export function DeploymentsTab({ agentId }: { agentId: string }) {
  const path = `/agents/${agentId}/deployments`;
  const [deployments, setDeployments] = useState<Deployment[]>([]);
  const [error, setError] = useState('');
  const [done, setDone] = useState('');
  const [busy, setBusy] = useState(false);
  const load = () => api<DeploymentList>('GET', `${path}?page_size=50`).then((answer) => setDeployments(answer.deployments), (caught) => setError(messageOf(caught)));
  useEffect(() => { void load(); }, [path]);

  // A canary's figures move and its phase ends: only that one deployment is read again, and
  // the list once it is no longer in progress. Nothing is read while the tab is in the background.
  const watched = deployments.find((deployment) => deployment.strategy !== null && deployment.status === 'in_progress')?.id;
  useEffect(() => {
    if (!watched) return;
    const timer = setInterval(() => {
      if (document.hidden) return;
      api<Deployment>('GET', `${path}/${watched}`).then((fresh) => {
        if (fresh.status !== 'in_progress') void load();
        else setDeployments((shown) => shown.map((deployment) => (deployment.id === fresh.id ? fresh : deployment)));
      }, (caught) => setError(messageOf(caught)));
    }, CANARY_POLL_MS);
    return () => clearInterval(timer);
  }, [path, watched]);

  const act = async (work: () => Promise<unknown>, outcome = '') => {
    setError('');
    setDone('');
    setBusy(true);
    try {
      await work();
      setDone(outcome);
      await load();
    } catch (caught) {
      setError(messageOf(caught));
    } finally {
      setBusy(false);
    }
  };
  const rollback = (target: Deployment) => act(() => api('POST', `/agents/${agentId}/rollback`, { deployment_id: target.id }));
  const end = (canary: Deployment, verb: 'promote' | 'abort', outcome: string) =>
    act(() => api<Deployment>('POST', `${path}/${canary.id}/${verb}`), `Deployment #${canary.number} ${outcome}.`);
  const canary = deployments.find(isServingCanary);

  return (
    <div>
      <Outcome error={error} done={done} />
      {canary && <CanaryPanel deployment={canary} busy={busy} onPromote={() => end(canary, 'promote', 'promoted: the new version takes all requests')} onAbort={() => end(canary, 'abort', 'aborted: the stable version serves alone')} />}
      <div class="table-scroll">
        <table>
          <thead><tr><th scope="col">#</th><th scope="col">Status</th><th scope="col">Image</th><th scope="col">Model</th><th scope="col">Created</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
          <tbody>
            {deployments.map((deployment, index) => (
              <tr key={deployment.id}>
                <td>{deployment.number}</td>
                <td>{deployment.status} <StrategyBadge deployment={deployment} /></td>
                <td class="url">{deployment.image}</td>
                <td>{deployment.model}</td>
                <td><time dateTime={deployment.created_at}>{new Date(deployment.created_at).toLocaleString()}</time></td>
                <td>{index > 0 && <button type="button" aria-label={`Roll back to deployment ${deployment.number}`} disabled={busy} onClick={() => rollback(deployment)}>Roll back</button>}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </div>
  );
}
