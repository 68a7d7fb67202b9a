import type { Agent } from '../control/schemas/agents.js';
import type { Context } from './context.js';
import { canarySummary } from './deployment-view.js';
import { followRollout, followUntilCanary, newestDeployment } from './follow-rollout.js';
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
  printAgent(context, agent);
  if (wait) await followRollout(context.api, agent, context.terminal);
}

/**
 * Prints the API's answer to a canary deploy, follows it (unless `detached`) until the
 * canary serves, and then says which deployment it is, its preview URL and the commands
 * that promote or abort it: on stdout, or on stderr with --json, where stdout is the API's.
 */
export async function reportCanaryStart(context: Context, agent: Agent, detached: boolean | undefined): Promise<void> {
  printAgent(context, agent);
  const deployment = detached ? await newestDeployment(context.api, agent) : await followUntilCanary(context.api, agent, context.terminal);
  const summary = canarySummary(agent, deployment, context.terminal.paint);
  if (context.json) context.terminal.err(summary);
  else context.terminal.out(`\n${summary}`);
}

function printAgent(context: Context, agent: Agent): void {
  if (context.json) printJson(context.terminal, agent);
  else showAgent(context.terminal, agent);
}
