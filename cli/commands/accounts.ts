import type { CurrentUser } from '../../control/schemas/auth.js';
import { command, group } from '../command.js';
import { writeConfigFile } from '../config-file.js';
import { CliError, EXIT } from '../errors.js';
import { withAccount } from '../stored-contexts.js';
import { printJson, table } from '../terminal.js';

export const accounts = group('accounts', 'The accounts you belong to, and which one commands act in', [
  command({
    command: 'list',
    examples: [['$0 accounts list', 'the one in use marked with *']],
    describe: 'The accounts you belong to with your role in each; * marks the one commands act in',
    builder: (yargs) => yargs,
    run: async (_args, { api, terminal, json }) => {
      const me = await api.request<CurrentUser>('GET', '/auth/me');
      const rows = me.memberships.map((membership) => ({ ...membership, current: membership.account_id === me.account_id }));
      if (json) return printJson(terminal, { current: me.account_id, accounts: rows });
      terminal.out(table(['current', 'account', 'role', 'default'], rows.map((row) => [row.current ? '*' : '', row.account_id, row.role, row.default ? 'yes' : '']), terminal.paint));
    },
  }),
  command({
    command: 'use <account>',
    examples: [['$0 accounts use acc_7Hq2Lm9Xc4Vb8Nz1Rt5K', 'every later command of this context acts in it']],
    describe: 'Act in this account from now on, in the context in use (sent as X-Account-Id); its session stays',
    builder: (yargs) => yargs.positional('account', { type: 'string', demandOption: true, describe: 'an account id (acc_…) from accounts list' }),
    run: async (args, { api, settings, terminal }) => {
      const me = await api.request<CurrentUser>('GET', '/auth/me');
      const membership = me.memberships.find((m) => m.account_id === args.account);
      if (!membership) throw new CliError(`you do not belong to ${args.account}: agentctl accounts list shows your accounts`, EXIT.refused);
      writeConfigFile(settings.configPath, withAccount(settings.stored, settings.contextName, args.account));
      terminal.err(`Using account ${args.account} (${membership.role}) in context ${settings.contextName}`);
    },
  }),
]);
