import type { Argv } from 'yargs';
import type { Agent } from '../../control/schemas/agents.js';
import type { DeploymentList } from '../../control/schemas/deployments.js';
import type { ApiClient } from '../api-client.js';
import { command, group } from '../command.js';
import type { Context, GlobalOptions } from '../context.js';
import { DEPLOYMENT_COLUMNS, deploymentRow, showDeployment, showServingCanaries, type DeploymentView } from '../deployment-view.js';
import { ApiRefused } from '../errors.js';
import { followDeployment } from '../follow-rollout.js';
import { resolveAgent, slugOf } from '../resolve-agent.js';
import { printJson, table } from '../terminal.js';
import { reportChange } from '../agent-view.js';

const list = command({
  command: 'list <agent>',
  examples: [["$0 deployments list support-bot", "its deployments, newest first; a canary's phase and figures while it serves"], ["$0 deployments list support-bot --page 2", "older ones"]],
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
    const deployments: DeploymentView[] = list.deployments;
    terminal.out(table(DEPLOYMENT_COLUMNS, deployments.map(deploymentRow), terminal.paint));
    showServingCanaries(terminal, deployments);
    if (list.has_next) terminal.err(`${list.total} deployments; this is page ${list.page}: --page ${list.page + 1} for more`);
  },
});

/** `<agent> <deployment>`, as every command about one deployment takes them. */
const withDeploymentPositionals = (yargs: Argv<GlobalOptions>) =>
  yargs
    .positional('agent', { type: 'string', demandOption: true, describe: 'id, slug or unique name' })
    .positional('deployment', { type: 'string', demandOption: true, describe: 'a deployment id (dep_…) or its number' });

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

/** The agent and the deployment's id from `<agent> <deployment id|number>`. */
async function resolveDeployment(api: ApiClient, agentReference: string, deploymentReference: string): Promise<{ agent: Agent; deploymentId: string }> {
  const agent = await resolveAgent(api, agentReference);
  return { agent, deploymentId: await deploymentId(api, agent.id, deploymentReference) };
}

const deploymentPath = (agent: Agent, deploymentId: string) => `/agents/${agent.id}/deployments/${encodeURIComponent(deploymentId)}`;

const get = command({
  command: 'get <agent> <deployment>',
  examples: [["$0 deployments get support-bot 3", "deployment number 3: its status, strategy, and a canary's preview URL and figures"], ["$0 deployments get support-bot dep_0123 --json", "by id, the API's JSON"]],
  describe: "One deployment (by id or number): what it rolled out and how it went; while a canary serves, both versions' figures",
  builder: withDeploymentPositionals,
  run: async (args, { api, terminal, json }) => {
    const { agent, deploymentId } = await resolveDeployment(api, args.agent, args.deployment);
    const deployment = await api.request<DeploymentView>('GET', deploymentPath(agent, deploymentId));
    if (json) printJson(terminal, deployment);
    else showDeployment(terminal, deployment);
  },
});

/** Prints the API's answer to a promote or abort: the deployment. */
function printDeployment({ terminal, json }: Context, deployment: DeploymentView): void {
  if (json) printJson(terminal, deployment);
  else showDeployment(terminal, deployment);
}

const promote = command({
  command: 'promote <agent> <deployment>',
  examples: [
    ["$0 deployments promote support-bot 3", "canary deployment 3 takes every request; wait until it alone serves"],
    ["$0 deployments promote support-bot 3 --detach", "return once the API accepted it"],
  ],
  describe: 'Promote a canary (by id or number) to serve every request, and follow the rollout until it alone serves (exit 0) or fails (exit 1)',
  builder: (yargs) => withDeploymentPositionals(yargs).option('detach', { type: 'boolean', describe: 'return once the API accepted the promotion, without following the rollout' }),
  run: async (args, context) => {
    const { api, terminal } = context;
    const { agent, deploymentId } = await resolveDeployment(api, args.agent, args.deployment);
    const deployment = await api.request<DeploymentView>('POST', `${deploymentPath(agent, deploymentId)}/promote`);
    printDeployment(context, deployment);
    if (args.detach) terminal.err(`Promoting deployment ${deployment.number}: agentctl deployments get ${slugOf(agent)} ${deployment.number} shows how far it is`);
    else await followDeployment(api, agent.id, deployment.id, terminal);
  },
});

const abort = command({
  command: 'abort <agent> <deployment>',
  examples: [["$0 deployments abort support-bot 3", "stop canary deployment 3; the stable version takes every request again"]],
  describe: "Abort a canary (by id or number): its replicas stop and the version it ran beside serves every request; returns once the API accepted it",
  builder: withDeploymentPositionals,
  run: async (args, context) => {
    const { api, terminal } = context;
    const { agent, deploymentId } = await resolveDeployment(api, args.agent, args.deployment);
    const deployment = await api.request<DeploymentView>('POST', `${deploymentPath(agent, deploymentId)}/abort`);
    printDeployment(context, deployment);
    terminal.err(`Aborting canary deployment ${deployment.number} of ${agent.name}: the stable version takes every request again`);
  },
});

export const rollback = command({
  command: 'rollback <agent> <deployment>',
  examples: [["$0 deployments rollback support-bot 3", "roll out deployment number 3 again"], ["$0 deployments rollback support-bot dep_0123 --wait", "by id, following the rollout"]],
  describe: "Roll out a past deployment's configuration again (by id or number) as a new deployment",
  builder: (yargs) => withDeploymentPositionals(yargs).option('wait', { type: 'boolean', describe: 'follow the rollout; exit 0 at running, 1 when it fails' }),
  run: async (args, context: Context) => {
    const { api } = context;
    const { agent, deploymentId: target } = await resolveDeployment(api, args.agent, args.deployment);
    const updated = await api.request<Agent>('POST', `/agents/${agent.id}/rollback`, { body: { deployment_id: target }, headers: { 'if-match': `"${agent.version}"` } });
    await reportChange(context, updated, args.wait);
  },
});

// `deployments <agent>` was the listing before deployments became a group: it still is.
export const deployments = group('deployments', "An agent's deployments: list and show them, promote or abort a canary, roll back to one", [list, get, promote, abort, rollback], list);
