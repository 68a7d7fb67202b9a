import type { Agent } from '../../control/schemas/agents.js';
import type { Argv } from 'yargs';
import { reportChange } from '../agent-view.js';
import { command, group } from '../command.js';
import type { Context } from '../context.js';
import { keyValue } from '../deploy-flags.js';
import { changedEnv, type EnvChange } from '../env-change.js';
import { ApiRefused, UsageError } from '../errors.js';
import { resolveAgent } from '../resolve-agent.js';
import { readSecretFile, readSecretInput } from '../secret-input.js';
import { printJson, table } from '../terminal.js';

/** Tries of a change whose If-Match lost to another change: a 412 commits nothing, so trying again is safe. */
const ATTEMPTS = 3;

/**
 * Sends the agent's env list with `change` applied as a deploy, If-Match on the version it
 * was read at, so a change made in between is never overwritten: on 412 the list is read
 * and merged again. Then follows the rollout unless --detach.
 */
async function applyChange(context: Context, reference: string, change: EnvChange, detach: boolean | undefined): Promise<void> {
  let agent = await resolveAgent(context.api, reference);
  for (let attempt = 1; ; attempt++) {
    const body = { env: changedEnv(agent.deploy.env, change) };
    try {
      const updated = await context.api.request<Agent>('POST', `/agents/${agent.id}/deploy`, { body, headers: { 'if-match': `"${agent.version}"` } });
      return await reportChange(context, updated, !detach);
    } catch (error) {
      if (!(error instanceof ApiRefused && error.status === 412) || attempt === ATTEMPTS) throw error;
      agent = await context.api.request<Agent>('GET', `/agents/${agent.id}`);
    }
  }
}

const withAgent = <T>(yargs: Argv<T>) => yargs.positional('agent', { type: 'string', demandOption: true, describe: 'id, slug or unique name' });

const withDetach = <T>(yargs: Argv<T>) =>
  yargs.option('detach', { type: 'boolean', describe: 'return once the API accepted the change, without following the rollout it starts' });

const envList = command({
  command: 'list <agent>',
  describe: "The agent's plain variables with their values (secrets: agentctl secrets list)",
  builder: (yargs) => withAgent(yargs).example([['$0 env list support-bot', '']]),
  run: async (args, { api, terminal, json }) => {
    const env = (await resolveAgent(api, args.agent)).deploy.env.filter((entry) => !entry.secret).map(({ key, value }) => ({ key, value }));
    if (json) return printJson(terminal, { env });
    terminal.out(table(['key', 'value'], env.map((entry) => [entry.key, entry.value]), terminal.paint));
  },
});

const envSet = command({
  command: 'set <agent> <entries..>',
  describe: 'Set plain variables, keeping the others; a new deployment rolls it out',
  builder: (yargs) =>
    withDetach(withAgent(yargs).positional('entries', { type: 'string', array: true, demandOption: true, describe: 'KEY=VALUE, one or more' })).example([
      ['$0 env set support-bot LOG_LEVEL=debug REGION=eu', 'set two variables and wait for the rollout'],
      ['$0 env set support-bot LOG_LEVEL=info --detach', 'return as soon as the API accepted it'],
    ]),
  run: async (args, context) => {
    const set = args.entries.map((entry) => keyValue('env set', entry));
    await applyChange(context, args.agent, { secret: false, set, unset: [] }, args.detach);
  },
});

const envUnset = command({
  command: 'unset <agent> <keys..>',
  describe: 'Remove plain variables, keeping the others; a new deployment rolls it out',
  builder: (yargs) =>
    withDetach(withAgent(yargs).positional('keys', { type: 'string', array: true, demandOption: true, describe: 'variable names, one or more' })).example([
      ['$0 env unset support-bot LOG_LEVEL', ''],
    ]),
  run: async (args, context) => {
    await applyChange(context, args.agent, { secret: false, set: [], unset: args.keys }, args.detach);
  },
});

const secretsList = command({
  command: 'list <agent>',
  describe: "The names of the agent's secrets (values are never shown: the API keeps them sealed)",
  builder: (yargs) => withAgent(yargs).example([['$0 secrets list support-bot', '']]),
  run: async (args, { api, terminal, json }) => {
    const secrets = (await resolveAgent(api, args.agent)).deploy.env.filter((entry) => entry.secret).map(({ key }) => ({ key }));
    if (json) return printJson(terminal, { secrets });
    terminal.out(table(['name'], secrets.map((entry) => [entry.key]), terminal.paint));
  },
});

/**
 * The secrets `secrets set` was given: `KEY=VALUE` entries, `--from-file KEY=PATH`, and at
 * most one bare `KEY` (or `KEY -`) whose value is read from stdin, so no value need be on
 * the command line, where `ps` and shell history would keep it.
 */
async function secretsGiven(entries: string[], files: string[]): Promise<{ key: string; value: string }[]> {
  const given: { key: string; value: string }[] = [];
  const fromStdin: string[] = [];
  for (const entry of entries) {
    if (entry === '-') continue;
    if (entry.includes('=')) given.push(keyValue('secrets set', entry));
    else fromStdin.push(entry);
  }
  for (const file of files) {
    const { key, value: path } = keyValue('--from-file', file);
    given.push({ key, value: readSecretFile('--from-file', path) });
  }
  if (fromStdin.length > 1) throw new UsageError(`only one secret can come from stdin, not ${fromStdin.join(', ')}: give the others as KEY=VALUE or --from-file`);
  if (fromStdin[0]) given.push({ key: fromStdin[0], value: await readSecretInput(fromStdin[0]) });
  if (!given.length) throw new UsageError('secrets set: give KEY=VALUE, KEY (value from stdin) or --from-file KEY=PATH');
  const keys = given.map((entry) => entry.key);
  const twice = keys.filter((key, index) => keys.indexOf(key) !== index);
  if (twice.length) throw new UsageError(`given more than once: ${[...new Set(twice)].join(', ')}`);
  return given;
}

const secretsSet = command({
  command: 'set <agent> [entries..]',
  describe: 'Set secrets (sealed by the API, shown as ***), keeping the others; a new deployment rolls it out',
  builder: (yargs) =>
    withDetach(withAgent(yargs))
      .positional('entries', { type: 'string', array: true, describe: 'KEY=VALUE, or KEY alone (or KEY -) to read its value from stdin' })
      .option('from-file', { type: 'string', array: true, describe: "KEY=PATH: the file's contents (one trailing newline dropped), repeatable" })
      .example([
        ['printf %s "$TOKEN" | $0 secrets set support-bot API_TOKEN', 'the value from stdin, never on the command line'],
        ['$0 secrets set support-bot API_TOKEN -', 'the same; on a terminal it is typed without echo'],
        ['$0 secrets set support-bot --from-file TLS_KEY=./key.pem', "a file's contents"],
        ['$0 secrets set support-bot A=1 B=2 --detach', 'inline values (visible to ps and shell history)'],
      ]),
  run: async (args, context) => {
    const set = await secretsGiven(args.entries ?? [], args.fromFile ?? []);
    await applyChange(context, args.agent, { secret: true, set, unset: [] }, args.detach);
  },
});

const secretsUnset = command({
  command: 'unset <agent> <keys..>',
  describe: 'Remove secrets, keeping the others; a new deployment rolls it out',
  builder: (yargs) =>
    withDetach(withAgent(yargs).positional('keys', { type: 'string', array: true, demandOption: true, describe: 'secret names, one or more' })).example([
      ['$0 secrets unset support-bot API_TOKEN', ''],
    ]),
  run: async (args, context) => {
    await applyChange(context, args.agent, { secret: true, set: [], unset: args.keys }, args.detach);
  },
});

export const env = group('env', "An agent's plain environment variables, changed one by one", [envList, envSet, envUnset]);
export const secrets = group('secrets', "An agent's secrets: set from stdin or files, listed by name only", [secretsList, secretsSet, secretsUnset]);
