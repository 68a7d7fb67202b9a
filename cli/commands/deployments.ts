import type { Agent } from '../../control/schemas/agents.js';
import type { Deployment, DeploymentList } from '../../control/schemas/deployments.js';
import type { ApiClient } from '../api-client.js';
import { command, group } from '../command.js';
import type { Context } from '../context.js';
import { ApiRefused } from '../errors.js';
import { resolveAgent } from '../resolve-agent.js';
import { printJson, table } from '../terminal.js';
import { reportChange } from '../agent-view.js';

const row = (deployment: Deployment) => [
  deployment.number, deployment.id, deployment.status, deployment.image, deployment.rollback_of ? `rollback of ${deployment.rollback_of}` : '',
  deployment.created_at, deployment.error,
];

const list = command({
  command: 'list <agent>',
  examples: [["$0 deployments list support-bot", "its deployments, newest first"], ["$0 deployments list support-bot --page 2", "older ones"]],
  describe: "The agent's deployments (each deploy, create that deploys, and rollback), newest first",
  builder: (yargs) =>
    yargs
      .positional('agent', { type: 'string', demandOption: true, describe: 'id, slug or unique name' })
      .option('page', { type: 'number', default: 1, describe: 'which page, from 1' })
      .option('page-size', { type: 'number', default: 20, describe: 'deployments per page (1–100)' }),
  run: async (args, { api, terminal, json }) => {
    const agent = await resolveAgent(api, args.agent);
    const list = await api.request<DeploymentList>('GET', `/agents/${agent.id}/deployments`, { query: { page: args.page, page_size: args.pageSize } });
    if (json) return printJson(terminal, list);
    terminal.out(table(['#', 'id', 'status', 'image', 'rollback', 'created', 'error'], list.deployments.map(row), terminal.paint));
    if (list.has_next) terminal.err(`${list.total} deployments; this is page ${list.page}: --page ${list.page + 1} for more`);
  },
});

/** A deployment id as given, or the id of the deployment with that number (paging newest first until found). */
async function deploymentId(api: ApiClient, agentId: string, reference: string): Promise<string> {
  if (!/^\d+$/.test(reference)) return reference;
  const number = Number(reference);
  for (let page = 1; ; page++) {
    const list = await api.request<DeploymentList>('GET', `/agents/${agentId}/deployments`, { query: { page, page_size: 100 } });
    const found = list.deployments.find((deployment) => deployment.number === number);
    if (found) return found.id;
    if (!list.has_next || list.deployments.every((deployment) => deployment.number < number)) break;
  }
  throw new ApiRefused(404, 'DEPLOYMENT_NOT_FOUND', `the agent has no deployment number ${number} (older ones may have been pruned)`);
}

export const rollback = command({
  command: 'rollback <agent> <deployment>',
  examples: [["$0 deployments rollback support-bot 3", "roll out deployment number 3 again"], ["$0 deployments rollback support-bot dep_0123 --wait", "by id, following the rollout"]],
  describe: "Roll out a past deployment's configuration again (by id or number) as a new deployment",
  builder: (yargs) =>
    yargs
      .positional('agent', { type: 'string', demandOption: true, describe: 'id, slug or unique name' })
      .positional('deployment', { type: 'string', demandOption: true, describe: 'a deployment id (dep_…) or its number' })
      .option('wait', { type: 'boolean', describe: 'follow the rollout; exit 0 at running, 1 when it fails' }),
  run: async (args, context: Context) => {
    const { api } = context;
    const agent = await resolveAgent(api, args.agent);
    const target = await deploymentId(api, agent.id, args.deployment);
    const updated = await api.request<Agent>('POST', `/agents/${agent.id}/rollback`, { body: { deployment_id: target }, headers: { 'if-match': `"${agent.version}"` } });
    await reportChange(context, updated, args.wait);
  },
});

// `deployments <agent>` was the listing before deployments became a group: it still is.
export const deployments = group('deployments', "An agent's deployments: list them, roll back to one", [list, rollback], list);
