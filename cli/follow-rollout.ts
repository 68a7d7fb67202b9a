import type { Agent } from '../control/schemas/agents.js';
import type { Deployment, DeploymentList } from '../control/schemas/deployments.js';
import type { ApiClient } from './api-client.js';
import { ApiRefused, CliError, EXIT } from './errors.js';
import type { Terminal } from './terminal.js';

/**
 * The data of the deployment events stream's `progress` and `end` events (issue 15: GET
 * /agents/{id}/deployments/{deployment_id}/events). Typed here until control/schemas
 * documents the stream's events; only the fields read below.
 */
interface ProgressData {
  phase: string;
  replica_id?: string | null;
  message: string;
}
interface EndData {
  status: string;
}

const POLL_MS = 1000;

/**
 * `--wait`: follows the rollout of `agent` (the response of the change that started it)
 * until it ends, from the deployment's event stream where the API has one, else by polling
 * the agent's status. Returns normally when the deployment succeeded, or at `running` (or
 * `stopped` when it runs no replicas); throws exit 1 with the reason when the deployment
 * failed, or at `failed` or `crashed` with the agent's `error`. Progress goes to stderr,
 * so stdout keeps only the result.
 */
export async function followRollout(api: ApiClient, agent: Agent, terminal: Terminal): Promise<void> {
  const deploymentId = await newestDeployment(api, agent.id);
  const ended = deploymentId ? await followEvents(api, agent.id, deploymentId, terminal) : undefined;
  if (ended === undefined) return pollStatus(api, agent.id, terminal);
  if (ended === 'succeeded') return;
  const deployment = await api.request<Deployment>('GET', `/agents/${agent.id}/deployments/${deploymentId}`);
  throw new CliError(`deployment ${deployment.number} of ${agent.name} is ${deployment.status}: ${deployment.error ?? 'no reason given'}`, EXIT.refused);
}

/** The newest deployment's id, or undefined where the API keeps no deployments (before issue 15). */
async function newestDeployment(api: ApiClient, agentId: string): Promise<string | undefined> {
  try {
    const list = await api.request<DeploymentList>('GET', `/agents/${agentId}/deployments`, { query: { page_size: 1 } });
    return list.deployments[0]?.id;
  } catch (error) {
    // The agent exists (it was just changed): a 404 here means this API has no deployments route.
    if (error instanceof ApiRefused && error.status === 404) return undefined;
    throw error;
  }
}

/** The deployment's status from the stream's `end` event; undefined when there is no stream or it stopped short. */
async function followEvents(api: ApiClient, agentId: string, deploymentId: string, terminal: Terminal): Promise<string | undefined> {
  const progress = progressLine(terminal);
  try {
    for await (const event of api.events(`/agents/${agentId}/deployments/${deploymentId}/events`)) {
      if (event.event === 'progress') {
        const data = JSON.parse(event.data) as ProgressData;
        progress(`${data.phase}${data.replica_id ? ` ${data.replica_id}` : ''}: ${data.message}`);
      } else if (event.event === 'end') {
        const { status } = JSON.parse(event.data) as EndData;
        progress.done(`deployment ${status}`);
        return status;
      }
    }
    progress.done('');
    return undefined;
  } catch (error) {
    progress.done('');
    // An API with deployments but without their event stream: the status tells the end.
    if (error instanceof ApiRefused && error.status === 404) return undefined;
    throw error;
  }
}

async function pollStatus(api: ApiClient, agentId: string, terminal: Terminal): Promise<void> {
  const progress = progressLine(terminal);
  for (let tick = 0; ; tick++) {
    const agent = await api.request<Agent>('GET', `/agents/${agentId}`);
    if (agent.status === 'running' || agent.status === 'stopped') {
      progress.done(`${agent.name} is ${agent.status} (${agent.replicas} replicas)`);
      return;
    }
    if (agent.status === 'failed' || agent.status === 'crashed') {
      progress.done('');
      throw new CliError(`${agent.name} is ${agent.status}: ${agent.error ?? 'no reason given'}`, EXIT.refused);
    }
    progress(`${agent.status}${terminal.isTty ? ` ${'|/-\\'[tick % 4]}` : ''}`);
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
