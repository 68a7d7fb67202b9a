import type { Static } from '@sinclair/typebox';
import type { AccessKeyCreated, AccessKeyList, ApiKeyCreated, ApiKeyList, KeyView } from '../../control/schemas/keys.js';
import { command, group } from '../command.js';
import { resolveAgent } from '../resolve-agent.js';
import { printJson, table, type Terminal } from '../terminal.js';

const DEFAULT_LABEL = 'agentctl';

const keyTable = (keys: KeyView[]) => table(['id', 'label', 'key', 'created'], keys.map((key) => [key.id, key.label, key.key_preview, key.created_at]));

/** The full secret is in this response only: say so beside it. */
function showCreated(terminal: Terminal, json: boolean, created: KeyView & { key: string }): void {
  if (json) return printJson(terminal, created);
  terminal.out(created.key);
  terminal.err(`Key ${created.id} (${created.label}): shown once, keep it now`);
}

const label = { type: 'string', default: DEFAULT_LABEL, describe: 'a name to tell keys apart' } as const;

export const keys = group('keys', "An agent's access keys (agk_…), which callers send to a private agent", [
  command({
    command: 'create <agent>',
    examples: [["$0 keys create support-bot --label ci", "prints the key once"]],
    describe: 'Create an access key; it is printed once',
    builder: (yargs) => yargs.positional('agent', { type: 'string', demandOption: true, describe: 'id, slug or unique name' }).option('label', label),
    run: async (args, { api, terminal, json }) => {
      const agent = await resolveAgent(api, args.agent);
      showCreated(terminal, json, await api.request<Static<typeof AccessKeyCreated>>('POST', `/agents/${agent.id}/access-keys`, { body: { label: args.label } }));
    },
  }),
  command({
    command: 'list <agent>',
    examples: [["$0 keys list support-bot", ""]],
    describe: "The agent's access keys, without the secrets",
    builder: (yargs) => yargs.positional('agent', { type: 'string', demandOption: true, describe: 'id, slug or unique name' }),
    run: async (args, { api, terminal, json }) => {
      const agent = await resolveAgent(api, args.agent);
      const list = await api.request<Static<typeof AccessKeyList>>('GET', `/agents/${agent.id}/access-keys`);
      terminal.out(json ? JSON.stringify(list, null, 2) : keyTable(list.access_keys));
    },
  }),
  command({
    command: 'revoke <agent> <key>',
    examples: [["$0 keys revoke support-bot akey_0123", ""]],
    describe: 'Revoke an access key by id; the next request with it is refused',
    builder: (yargs) => yargs.positional('agent', { type: 'string', demandOption: true, describe: 'id, slug or unique name' }).positional('key', { type: 'string', demandOption: true, describe: 'the key id' }),
    run: async (args, { api, terminal }) => {
      const agent = await resolveAgent(api, args.agent);
      await api.request('DELETE', `/agents/${agent.id}/access-keys/${encodeURIComponent(args.key)}`);
      terminal.err(`Revoked ${args.key}`);
    },
  }),
]);

export const apiKeys = group('api-keys', 'Your personal API keys (agnt_…), which act as you; managed with a session token only', [
  command({
    command: 'create',
    examples: [["$0 api-keys create --label laptop", "prints the key once"]],
    describe: 'Create a personal API key; it is printed once',
    builder: (yargs) => yargs.option('label', label),
    run: async (args, { api, terminal, json }) => {
      showCreated(terminal, json, await api.request<Static<typeof ApiKeyCreated>>('POST', '/api-keys', { body: { label: args.label } }));
    },
  }),
  command({
    command: 'list',
    examples: [["$0 api-keys list", ""]],
    describe: 'Your personal API keys, without the secrets',
    builder: (yargs) => yargs,
    run: async (_args, { api, terminal, json }) => {
      const list = await api.request<Static<typeof ApiKeyList>>('GET', '/api-keys');
      terminal.out(json ? JSON.stringify(list, null, 2) : keyTable(list.api_keys));
    },
  }),
  command({
    command: 'revoke <key>',
    examples: [["$0 api-keys revoke pkey_0123", ""]],
    describe: 'Revoke a personal API key by id',
    builder: (yargs) => yargs.positional('key', { type: 'string', demandOption: true, describe: 'the key id' }),
    run: async (args, { api, terminal }) => {
      await api.request('DELETE', `/api-keys/${encodeURIComponent(args.key)}`);
      terminal.err(`Revoked ${args.key}`);
    },
  }),
]);
