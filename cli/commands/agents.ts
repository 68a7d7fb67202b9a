import { readFileSync } from 'node:fs';
import type { Agent, CreateAgentBody, DeployInput, ScaleResult } from '../../control/schemas/agents.js';
import { command, group } from '../command.js';
import { canaryStrategy, withCanaryFlags, type CanaryStrategyInput } from '../canary-flags.js';
import { envEntries, withEnvFlags } from '../deploy-flags.js';
import { UsageError } from '../errors.js';
import { confirm } from '../prompt.js';
import { resolveAgent, slugOf } from '../resolve-agent.js';
import { printJson, table } from '../terminal.js';
import { reportCanaryStart, reportChange, showAgent } from '../agent-view.js';
import { invoke } from './invoke.js';
import { logs, metrics } from './observability.js';

interface AgentPage {
  agents: Agent[];
  total: number;
  page: number;
  has_next: boolean;
}

const agentRow = (agent: Agent) => [agent.id, slugOf(agent), agent.name, agent.status, agent.replicas, agent.access, agent.deploy.image];

const list = command({
  command: 'list',
  examples: [["$0 agents list", "every agent, newest first"], ["$0 agents list --status running --tag prod", "only running agents tagged prod"]],
  describe: "The account's agents, newest first",
  builder: (yargs) =>
    yargs
      .option('status', { type: 'string', describe: 'only agents in this status' })
      .option('tag', { type: 'string', describe: 'only agents with this tag' })
      .option('page', { type: 'number', default: 1, describe: 'which page, from 1' })
      .option('page-size', { type: 'number', default: 100, describe: 'agents per page (1–100)' }),
  run: async (args, { api, terminal, json }) => {
    const page = await api.request<AgentPage>('GET', '/agents', { query: { status: args.status, tag: args.tag, page: args.page, page_size: args.pageSize } });
    if (json) return printJson(terminal, page);
    terminal.out(table(['id', 'slug', 'name', 'status', 'replicas', 'access', 'image'], page.agents.map(agentRow), terminal.paint));
    if (page.has_next) terminal.err(`${page.total} agents; this is page ${page.page}: --page ${page.page + 1} for more`);
  },
});

const get = command({
  command: 'get <agent>',
  examples: [["$0 agents get support-bot", "by slug (or id, or unique name)"], ["$0 agents get agt_0123 --json", "the API's JSON"]],
  describe: 'One agent (by id, slug or unique name)',
  builder: (yargs) => yargs.positional('agent', { type: 'string', demandOption: true, describe: 'id, slug or unique name' }),
  run: async (args, { api, terminal, json }) => {
    const agent = await resolveAgent(api, args.agent);
    if (json) printJson(terminal, agent);
    else showAgent(terminal, agent);
  },
});

const create = command({
  command: 'create',
  examples: [["$0 agents create --name support-bot", "create it without running it"], ["$0 agents create --name support-bot --model gpt-4o-mini --api-key \"$OPENAI_API_KEY\" --deploy --wait", "create, deploy and wait until it runs"], ["$0 agents create --name web --image ghcr.io/acme/web:1 --port 3000 --public --deploy", "a public container of your own"]],
  describe: 'Create an agent; with --deploy (implied by any deploy flag) it starts running',
  builder: (yargs) =>
    withEnvFlags(yargs)
      .option('name', { type: 'string', demandOption: true, describe: 'a display name; the slug in its URL is made from it' })
      .option('image', { type: 'string', describe: 'a public image; default: the platform runtime' })
      .option('port', { type: 'number', describe: 'the port the image listens on' })
      .option('public', { type: 'boolean', describe: 'anyone may call it (default: an access key is needed)' })
      .option('model', { type: 'string', describe: 'the model the platform runtime calls (e.g. gpt-4o-mini)' })
      .option('api-key', { type: 'string', describe: "the model provider's key" })
      .option('system-prompt-file', { type: 'string', describe: 'a file holding the system prompt' })
      .option('replicas', { type: 'number', describe: 'how many replicas run (0–100, default 1)' })
      .option('cpu', { type: 'number', describe: 'vCPUs per replica' })
      .option('memory-mb', { type: 'number', describe: 'MiB per replica' })
      .option('tag', { type: 'string', array: true, describe: 'a label to filter by (agents list --tag), repeatable' })
      .option('deploy', { type: 'boolean', describe: 'deploy it now' })
      .option('wait', { type: 'boolean', describe: 'follow the rollout; exit 0 at running, 1 at failed/crashed' }),
  run: async (args, context) => {
    const resources = args.cpu !== undefined || args.memoryMb !== undefined ? { cpu: args.cpu, memory_mb: args.memoryMb } : undefined;
    const deploy: DeployInput = { image: args.image, port: args.port, replicas: args.replicas, resources, env: envEntries(args.env, args.secret) };
    const deploying = Boolean(args.deploy) || Object.values(deploy).some((value) => value !== undefined);
    if (args.wait && !deploying) throw new UsageError('--wait follows a rollout: add --deploy');
    const body: CreateAgentBody = {
      name: args.name,
      model: args.model,
      api_key: args.apiKey,
      system_prompt: args.systemPromptFile === undefined ? undefined : readFileSync(args.systemPromptFile, 'utf8'),
      access: args.public ? 'public' : undefined,
      tags: args.tag,
      deploy: deploying ? deploy : undefined,
    };
    await reportChange(context, await context.api.request<Agent>('POST', '/agents', { body }), args.wait);
  },
});

const deploy = command({
  command: 'deploy <agent>',
  describe:
    'Redeploy and follow the rollout until the new version alone serves (exit 0) or fails (exit 1); omitted settings keep their values. ' +
    'With --canary the new version serves a share of requests beside the current one until promoted or aborted, and deploy returns once it serves',
  builder: (yargs) =>
    withCanaryFlags(
      withEnvFlags(yargs.positional('agent', { type: 'string', demandOption: true, describe: 'id, slug or unique name' }))
        .option('image', { type: 'string', describe: 'the image to run; default: the one deployed now' })
        .option('detach', { type: 'boolean', describe: 'return once the API accepted the deploy, without following the rollout' })
        // The default since deploy follows its rollout; kept so that scripts written for it still run.
        .option('wait', { type: 'boolean', hidden: true })
        .conflicts('detach', 'wait'),
    ).example([
      ['$0 agents deploy support-bot --image ghcr.io/acme/bot:1.4', 'roll out a new image and wait until it alone serves'],
      ['$0 agents deploy support-bot --detach', 'redeploy and return at once; follow with `agentctl deployments list support-bot`'],
      ['$0 agents deploy support-bot --image ghcr.io/acme/bot:1.5 --canary 10', 'a canary taking 10% of requests; prints its preview URL and how to promote or abort it'],
      ['$0 agents deploy support-bot --image ghcr.io/acme/bot:1.5 --canary 5 --auto-promote 30m --max-error-ratio 0.02', 'promoted after 30 minutes unless its 5xx ratio passes 2% first'],
    ]),
  run: async (args, context) => {
    const strategy = canaryStrategy(args);
    const body: DeployInput & { strategy?: CanaryStrategyInput } = { image: args.image, env: envEntries(args.env, args.secret), strategy };
    const agent = await resolveAgent(context.api, args.agent);
    const updated = await context.api.request<Agent>('POST', `/agents/${agent.id}/deploy`, { body });
    if (strategy) await reportCanaryStart(context, updated, args.detach);
    else await reportChange(context, updated, !args.detach);
  },
});

const scale = command({
  command: 'scale <agent> <count>',
  examples: [["$0 agents scale support-bot 3", "run 3 replicas"], ["$0 agents scale support-bot 0", "stop every replica, keep the agent"]],
  describe: 'Run <count> replicas',
  builder: (yargs) => yargs.positional('agent', { type: 'string', demandOption: true, describe: 'id, slug or unique name' }).positional('count', { type: 'number', demandOption: true, describe: 'replicas to run, 0 or more' }),
  run: async (args, { api, terminal, json }) => {
    if (!Number.isInteger(args.count) || args.count < 0) throw new UsageError(`<count> must be a whole number of replicas, not ${args.count}`);
    const agent = await resolveAgent(api, args.agent);
    // deploy.replicas is the count asked for; `replicas` is what runs right now.
    const change = args.count - agent.deploy.replicas;
    if (change === 0) {
      if (json) printJson(terminal, agent);
      else terminal.out(`${agent.name} already asks for ${agent.deploy.replicas} replicas`);
      return;
    }
    // The API takes a step up or down; If-Match keeps a concurrent change from being stepped past.
    const result = await api.request<ScaleResult>('POST', `/agents/${agent.id}/scale`, {
      body: { direction: change > 0 ? 'up' : 'down', count: Math.abs(change) },
      headers: { 'if-match': `"${agent.version}"` },
    });
    if (json) printJson(terminal, result);
    else terminal.out(`${agent.name}: ${result.previous_replicas} → ${result.current_replicas} replicas (${result.status})`);
  },
});

const remove = command({
  command: 'delete <agent>',
  examples: [["$0 agents delete support-bot", "asks first on a terminal"], ["$0 agents delete support-bot --yes", "no question, for scripts"]],
  describe: 'Stop the agent and delete it with its access keys',
  builder: (yargs) => yargs.positional('agent', { type: 'string', demandOption: true, describe: 'id, slug or unique name' }).option('yes', { type: 'boolean', describe: 'do not ask' }),
  run: async (args, { api, terminal }) => {
    const agent = await resolveAgent(api, args.agent);
    if (!args.yes) {
      if (!terminal.stdinIsTty) throw new UsageError('delete asks for confirmation on a terminal: pass --yes');
      if (!(await confirm(`Delete ${agent.name} (${agent.id})?`))) return terminal.err('Not deleted');
    }
    await api.request('DELETE', `/agents/${agent.id}`, { headers: { 'if-match': `"${agent.version}"` } });
    terminal.err(`Deleted ${agent.name} (${agent.id})`);
  },
});

export const agents = group('agents', 'Create, list, deploy, scale and delete agents; read their logs and metrics; call them', [list, get, create, deploy, scale, remove, logs, metrics, invoke]);
