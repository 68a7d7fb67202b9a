import type { Agent } from '../control/schemas/agents.js';
import type { DeploymentProgress, DeploymentStreamEnd } from '../control/schemas/deployment-events.js';
import type { DeploymentList } from '../control/schemas/deployments.js';
import type { ApiClient } from './api-client.js';
import type { DeploymentView } from './deployment-view.js';
import { ApiRefused, CliError, EXIT } from './errors.js';
import type { Terminal } from './terminal.js';

const POLL_MS = 1000;

/** The phase of a deployment's stream, and its `phase`, once its canary serves beside the stable version. */
const CANARY_SERVING = 'canary';

/**
 * `--wait`: follows the rollout of `agent` (the response of the change that started it)
 * until it ends. The newest deployment, the one that change recorded, decides: its event
 * stream is read to its `end` (progress on stderr, so stdout keeps only the result), or,
 * where the API has no stream or the stream stops short, its status is polled; it returns
 * when the deployment succeeded and throws exit 1 with the reason otherwise.
 */
export async function followRollout(api: ApiClient, agent: Agent, terminal: Terminal): Promise<void> {
  const newest = await newestDeployment(api, agent);
  await followDeployment(api, agent.id, newest.id, terminal);
}

/** Follows one deployment (a promoted canary's, say) to its end: returns it when it succeeded, throws exit 1 otherwise. */
export async function followDeployment(api: ApiClient, agentId: string, deploymentId: string, terminal: Terminal): Promise<DeploymentView> {
  const ended = (await followEvents(api, agentId, deploymentId, terminal)) ?? (await pollDeployment(api, agentId, deploymentId, terminal, hasEnded));
  if (ended.status === 'succeeded') return ended;
  throw await rolloutFailed(api, agentId, ended);
}

/**
 * `agents deploy --canary`: follows the newest deployment, the canary, only until it serves
 * beside the stable version (its stream's `canary` step, or its `phase` where there is no
 * stream), not to its end: a canary may run for hours before it is promoted or aborted.
 * Returns the deployment then; throws exit 1 when it fails (or is aborted) before.
 */
export async function followUntilCanary(api: ApiClient, agent: Agent, terminal: Terminal): Promise<DeploymentView> {
  const newest = await newestDeployment(api, agent);
  const reached =
    (await followEvents(api, agent.id, newest.id, terminal, CANARY_SERVING)) ??
    (await pollDeployment(api, agent.id, newest.id, terminal, (deployment) => hasEnded(deployment) || servesCanary(deployment)));
  // Still in progress here means serving: the stream's `canary` step or the polled phase said so.
  if (reached.status === 'in_progress' || reached.status === 'succeeded') return reached;
  throw await rolloutFailed(api, agent.id, reached);
}

const hasEnded = (deployment: DeploymentView) => deployment.status !== 'in_progress';
const servesCanary = (deployment: DeploymentView) => deployment.status === 'in_progress' && deployment.phase === CANARY_SERVING;

/** Exit 1 with the reason: the deployment's error is its failed replica's; the agent's says the same where the deployment has none. */
async function rolloutFailed(api: ApiClient, agentId: string, ended: DeploymentView): Promise<CliError> {
  const current = await api.request<Agent>('GET', `/agents/${agentId}`);
  return new CliError(`deployment ${ended.number} of ${current.name} is ${ended.status}: ${ended.error ?? current.error ?? 'no reason given'}`, EXIT.refused);
}

/** The newest deployment: every change --wait follows records one. */
export async function newestDeployment(api: ApiClient, agent: Agent): Promise<DeploymentView> {
  const list = await api.request<DeploymentList>('GET', `/agents/${agent.id}/deployments`, { query: { page_size: 1 } });
  const newest = list.deployments[0];
  if (!newest) throw new CliError(`${agent.name} has no deployment to follow`, EXIT.refused);
  return newest;
}

/**
 * The deployment after its stream's `end`, or after the progress step `stopAt` (the
 * stream is closed then); undefined when there is no stream or it stopped short.
 */
async function followEvents(api: ApiClient, agentId: string, deploymentId: string, terminal: Terminal, stopAt?: string): Promise<DeploymentView | undefined> {
  const progress = progressLine(terminal);
  const stopReading = new AbortController();
  try {
    for await (const event of api.events(`/agents/${agentId}/deployments/${deploymentId}/events`, {}, stopReading.signal)) {
      if (event.event === 'progress') {
        const data = JSON.parse(event.data) as DeploymentProgress;
        const line = `${data.phase}${data.replica_id ? ` ${data.replica_id}` : ''}: ${data.message}`;
        if (data.phase !== stopAt) {
          progress(line);
          continue;
        }
        progress.done(line);
        return await deploymentOf(api, agentId, deploymentId);
      } else if (event.event === 'end') {
        const { status } = JSON.parse(event.data) as DeploymentStreamEnd;
        progress.done(`deployment ${status}`);
        return await deploymentOf(api, agentId, deploymentId);
      }
    }
    progress.done('');
    return undefined;
  } catch (error) {
    progress.done('');
    // An API with deployments but without their event stream: the deployment's status tells the end.
    if (error instanceof ApiRefused && error.status === 404) return undefined;
    throw error;
  } finally {
    // A stream left at a canary step stays open for as long as the canary runs.
    stopReading.abort();
  }
}

const deploymentOf = (api: ApiClient, agentId: string, deploymentId: string) => api.request<DeploymentView>('GET', `/agents/${agentId}/deployments/${deploymentId}`);

/**
 * Polls the deployment until `reached` holds: its end, or for a canary its serving. Its
 * status, not the agent's, says when a redeploy of a running agent is done: the agent is
 * `running` all along on its old replicas, while the deployment succeeds only once the new
 * version alone serves.
 */
async function pollDeployment(
  api: ApiClient, agentId: string, deploymentId: string, terminal: Terminal, reached: (deployment: DeploymentView) => boolean,
): Promise<DeploymentView> {
  return poll<DeploymentView>(terminal, async () => {
    const deployment = await deploymentOf(api, agentId, deploymentId);
    if (!reached(deployment)) return { waiting: `deployment ${deployment.number} in progress` };
    return { ended: deployment, line: `deployment ${deployment.number} ${servesCanary(deployment) ? 'serves as a canary' : deployment.status}` };
  });
}

type Look<T> = { waiting: string } | { ended: T; line: string };

/** Looks every POLL_MS until `look` sees an end, showing what it waits on (with a spinner on a terminal). */
async function poll<T>(terminal: Terminal, look: () => Promise<Look<T>>): Promise<T> {
  const progress = progressLine(terminal);
  for (let tick = 0; ; tick++) {
    const seen = await look();
    if ('ended' in seen) {
      progress.done(seen.line);
      return seen.ended;
    }
    progress(`${seen.waiting}${terminal.isTty ? ` ${'|/-\\'[tick % 4]}` : ''}`);
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

/** On a terminal one line redrawn in place; elsewhere a line per change, repeats dropped. */
function progressLine(terminal: Terminal) {
  let last = '';
  const show = (text: string) => {
    if (text === last) return;
    last = text;
    if (terminal.isTty) process.stderr.write(`\r\x1b[2K${text}`);
    else terminal.err(text);
  };
  return Object.assign(show, {
    done(text: string) {
      if (terminal.isTty && last) process.stderr.write('\r\x1b[2K');
      if (text) terminal.err(text);
      last = '';
    },
  });
}
