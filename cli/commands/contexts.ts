import { command, group } from '../command.js';
import { writeConfigFile } from '../config-file.js';
import { UsageError } from '../errors.js';
import { readSecretInput } from '../secret-input.js';
import { baseUrl } from '../settings.js';
import { withContext, withCurrent, withoutContext } from '../stored-contexts.js';
import { printJson, table } from '../terminal.js';

const NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

const add = command({
  command: 'add <name>',
  describe: 'Add (or replace) a named API target; the first one added becomes the one in use',
  builder: (yargs) =>
    yargs
      .positional('name', { type: 'string', demandOption: true, describe: 'letters, digits, . _ -' })
      .option('api-url', { type: 'string', demandOption: true, describe: 'the control API, /v1 included (https://agents.example.com/v1)' })
      .option('token', { type: 'string', describe: 'a personal API key (agnt_…) for it (visible to ps and shell history: prefer --token-stdin). Else run `agentctl auth login --context <name>`' })
      .option('token-stdin', { type: 'boolean', describe: 'read the token from stdin (typed without echo on a terminal), as docker login --password-stdin' })
      .conflicts('token', 'token-stdin')
      .option('use', { type: 'boolean', describe: 'make it the context in use now' })
      .example([
        ['$0 context add staging --api-url https://staging.example.com/v1', 'then: agentctl auth login --context staging'],
        ['printf %s "$KEY" | $0 context add ci --api-url https://agents.example.com/v1 --token-stdin', 'with an API key, kept off the command line'],
      ]),
  run: async (args, { settings, terminal, json }) => {
    if (!NAME.test(args.name)) throw new UsageError(`a context name is letters, digits, . _ - (at most 64), not ${JSON.stringify(args.name)}`);
    const token = args.tokenStdin ? await readSecretInput('token') : args.token;
    let config = withContext(settings.stored, args.name, { api_url: baseUrl('--api-url', args.apiUrl), ...(token ? { token } : {}) });
    if (args.use) config = withCurrent(config, args.name);
    writeConfigFile(settings.configPath, config);
    if (json) printJson(terminal, { name: args.name, api_url: config.contexts[args.name]!.api_url, current: config.current_context === args.name });
    else terminal.err(`Context ${args.name} → ${config.contexts[args.name]!.api_url}${config.current_context === args.name ? ' (in use)' : ''}`);
  },
});

const use = command({
  command: 'use <name>',
  describe: 'Use this context from now on (AGENTCTL_CONTEXT or --context pick another for one command)',
  builder: (yargs) => yargs.positional('name', { type: 'string', demandOption: true, describe: 'the context name' }).example([['$0 context use staging', '']]),
  run: async (args, { settings, terminal }) => {
    if (!settings.stored.contexts[args.name]) throw new UsageError(`no context named ${JSON.stringify(args.name)}: agentctl context list shows them`);
    writeConfigFile(settings.configPath, withCurrent(settings.stored, args.name));
    terminal.err(`Using context ${args.name}`);
  },
});

const list = command({
  command: 'list',
  describe: 'The contexts, the one in use marked with *',
  builder: (yargs) => yargs.example([['$0 context list', ''], ['AGENTCTL_CONTEXT=staging $0 agents list', 'one command against another context']]),
  run: async (_args, { settings, terminal, json }) => {
    const rows = Object.entries(settings.stored.contexts).map(([name, target]) => ({
      name,
      current: name === settings.contextName,
      api_url: target.api_url ?? null,
      user: target.email ?? null,
      signed_in: Boolean(target.token),
    }));
    if (json) return printJson(terminal, { current: settings.contextName, contexts: rows });
    terminal.out(table(['current', 'name', 'api', 'user'], rows.map((row) => [row.current ? '*' : '', row.name, row.api_url, row.user ?? (row.signed_in ? '(api key)' : '')]), terminal.paint));
  },
});

const remove = command({
  command: 'remove <name>',
  describe: 'Forget a context and its saved token (the API session is not ended: use logout for that)',
  builder: (yargs) => yargs.positional('name', { type: 'string', demandOption: true, describe: 'the context name' }).example([['$0 context remove staging', '']]),
  run: async (args, { settings, terminal }) => {
    if (!settings.stored.contexts[args.name]) throw new UsageError(`no context named ${JSON.stringify(args.name)}`);
    writeConfigFile(settings.configPath, withoutContext(settings.stored, args.name));
    terminal.err(`Removed context ${args.name}`);
  },
});

export const contexts = group('context', 'Named API targets, like kubectl contexts: add, use, list, remove', [add, use, list, remove]);
