import type { Agent } from '../control/schemas/agents.js';
import type { Context } from './context.js';
import { followRollout } from './follow-rollout.js';
import { slugOf } from './resolve-agent.js';
import { details, printJson, type Terminal } from './terminal.js';

export function showAgent(terminal: Terminal, agent: Agent): void {
  terminal.out(details([
    ['id', agent.id], ['name', agent.name], ['slug', slugOf(agent)], ['status', agent.status], ['url', agent.url],
    ['access', agent.access], ['replicas', agent.replicas], ['image', agent.deploy.image], ['model', agent.model],
    ['version', agent.version], ['tags', agent.tags.join(', ')], ['error', agent.error],
    ...(agent.access_key ? [['access key', `${agent.access_key}  (shown once)`] as [string, string]] : []),
  ], terminal.paint));
}

/** Prints the API's answer to a change, then follows the rollout with --wait. */
export async function reportChange(context: Context, agent: Agent, wait: boolean | undefined): Promise<void> {
  if (context.json) printJson(context.terminal, agent);
  else showAgent(context.terminal, agent);
  if (wait) await followRollout(context.api, agent, context.terminal);
}
