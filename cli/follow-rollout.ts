import type { Agent } from '../control/schemas/agents.js';
import type { DeploymentProgress, DeploymentStreamEnd } from '../control/schemas/deployment-events.js';
import type { Deployment, DeploymentList } from '../control/schemas/deployments.js';
import type { ApiClient } from './api-client.js';
import { ApiRefused, CliError, EXIT } from './errors.js';
import type { Terminal } from './terminal.js';

const POLL_MS = 1000;

/**
 * `--wait`: follows the rollout of `agent` (the response of the change that started it)
 * until it ends. The newest deployment, the one that change recorded, decides: its event
 * stream is read to its `end` (progress on stderr, so stdout keeps only the result), or,
 * where the API has no stream or the stream stops short, its status is polled; it returns
 * when the deployment succeeded and throws exit 1 with the reason otherwise.
 */
export async function followRollout(api: ApiClient, agent: Agent, terminal: Terminal): Promise<void> {
  const deploymentId = await newestDeployment(api, agent);
  const ended = (await followEvents(api, agent.id, deploymentId, terminal)) ?? (await pollDeployment(api, agent.id, deploymentId, terminal));
  if (ended.status === 'succeeded') return;
  // The deployment's error is its failed replica's; the agent's says the same where the deployment has none.
  const current = await api.request<Agent>('GET', `/agents/${agent.id}`);
  throw new CliError(`deployment ${ended.number} of ${current.name} is ${ended.status}: ${ended.error ?? current.error ?? 'no reason given'}`, EXIT.refused);
}

/** The newest deployment's id: every change --wait follows records one. */
async function newestDeployment(api: ApiClient, agent: Agent): Promise<string> {
  const list = await api.request<DeploymentList>('GET', `/agents/${agent.id}/deployments`, { query: { page_size: 1 } });
  const newest = list.deployments[0];
  if (!newest) throw new CliError(`${agent.name} has no deployment to follow`, EXIT.refused);
  return newest.id;
}

/** The deployment as it ended, after its stream's `end`; undefined when there is no stream or it stopped short. */
async function followEvents(api: ApiClient, agentId: string, deploymentId: string, terminal: Terminal): Promise<Deployment | undefined> {
  const progress = progressLine(terminal);
  try {
    for await (const event of api.events(`/agents/${agentId}/deployments/${deploymentId}/events`)) {
      if (event.event === 'progress') {
        const data = JSON.parse(event.data) as DeploymentProgress;
        progress(`${data.phase}${data.replica_id ? ` ${data.replica_id}` : ''}: ${data.message}`);
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
  }
}

const deploymentOf = (api: ApiClient, agentId: string, deploymentId: string) => api.request<Deployment>('GET', `/agents/${agentId}/deployments/${deploymentId}`);

/**
 * Polls the deployment until it is no longer in progress. Its status, not the agent's, says
 * when a redeploy of a running agent is done: the agent is `running` all along on its old
 * replicas, while the deployment succeeds only once the new version alone serves.
 */
async function pollDeployment(api: ApiClient, agentId: string, deploymentId: string, terminal: Terminal): Promise<Deployment> {
  return poll<Deployment>(terminal, async () => {
    const deployment = await deploymentOf(api, agentId, deploymentId);
    if (deployment.status === 'in_progress') return { waiting: `deployment ${deployment.number} in progress` };
    return { ended: deployment, line: `deployment ${deployment.number} ${deployment.status}` };
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
