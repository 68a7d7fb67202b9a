import type { Static } from '@sinclair/typebox';
import type { CurrentUser, Membership, SessionGrant } from '../../control/schemas/auth.js';
import { command, group } from '../command.js';
import { writeConfigFile } from '../config-file.js';
import { CliError, EXIT } from '../errors.js';
import { withAccount } from '../stored-contexts.js';
import { printJson, table } from '../terminal.js';
import { password, signIn } from './auth.js';

/** The secret of an invite link (`https://console.example.com/invites#invite_…`), or the secret given alone. */
function inviteSecret(linkOrSecret: string): string {
  const secret = linkOrSecret.includes('#') ? linkOrSecret.slice(linkOrSecret.indexOf('#') + 1) : linkOrSecret;
  if (!/^invite_[0-9A-Za-z]+$/.test(secret)) throw new CliError(`not an invite link: ${linkOrSecret} (it ends in #invite_…)`, EXIT.usage);
  return secret;
}

export const accounts = group('accounts', 'The accounts you belong to, and which one commands act in', [
  command({
    command: 'list',
    examples: [['$0 accounts list', 'the one in use marked with *']],
    describe: 'The accounts you belong to with your role in each; * marks the one commands act in',
    builder: (yargs) => yargs,
    run: async (_args, { api, settings, terminal, json }) => {
      const me = await api.request<CurrentUser>('GET', '/auth/me', { asUser: true });
      const current = settings.accountId ?? me.account_id;
      const rows = me.memberships.map((membership) => ({ ...membership, current: membership.account_id === current }));
      if (!rows.some((row) => row.current)) terminal.err(`The account in use, ${current}, is no longer one of yours: agentctl accounts use <account> picks another`);
      if (json) return printJson(terminal, { current, accounts: rows });
      terminal.out(table(['current', 'account', 'role', 'default'], rows.map((row) => [row.current ? '*' : '', row.account_id, row.role, row.default ? 'yes' : '']), terminal.paint));
    },
  }),
  command({
    command: 'use <account>',
    examples: [['$0 accounts use acc_7Hq2Lm9Xc4Vb8Nz1Rt5K', 'every later command of this context acts in it']],
    describe: 'Act in this account from now on, in the context in use (sent as X-Account-Id); its session stays',
    builder: (yargs) => yargs.positional('account', { type: 'string', demandOption: true, describe: 'an account id (acc_…) from accounts list' }),
    run: async (args, { api, settings, terminal }) => {
      const me = await api.request<CurrentUser>('GET', '/auth/me', { asUser: true });
      const membership = me.memberships.find((m) => m.account_id === args.account);
      if (!membership) throw new CliError(`you do not belong to ${args.account}: agentctl accounts list shows your accounts`, EXIT.refused);
      writeConfigFile(settings.configPath, withAccount(settings.stored, settings.contextName, args.account));
      terminal.err(`Using account ${args.account} (${membership.role}) in context ${settings.contextName}`);
    },
  }),
  command({
    command: 'join <link>',
    examples: [
      ['$0 accounts join https://console.example.com/invites#invite_4fQ… --use', 'signed in: join the account and act in it from now on'],
      ["$0 accounts join https://console.example.com/invites#invite_4fQ… --name 'Ada L'", 'not signed in: register as the invited email and sign in'],
    ],
    describe: 'Accept an invite link: signed in, join its account; signed out, register through it (--name) and sign in',
    builder: (yargs) =>
      yargs
        .positional('link', { type: 'string', demandOption: true, describe: 'the invite link (or its invite_… secret)' })
        .option('use', { type: 'boolean', default: false, describe: 'signed in: act in the joined account from now on, as accounts use does' })
        .option('name', { type: 'string', describe: 'signed out: your name, to register as the invited email' })
        .option('password', { type: 'string', describe: 'signed out: at least 8 characters; prompted for when omitted on a terminal' }),
    run: async (args, context) => {
      const { api, settings, terminal, json } = context;
      const path = `/auth/invites/${inviteSecret(args.link)}/accept`;
      if (!settings.token) {
        if (args.name === undefined) throw new CliError('not signed in: give --name to register through the invite, or sign in first (agentctl auth login) to join with your user', EXIT.usage);
        return signIn(context, await api.request<Static<typeof SessionGrant>>('POST', path, { body: { name: args.name, password: await password(args.password) } }));
      }
      if (args.name !== undefined || args.password !== undefined) {
        throw new CliError('signed in: --name and --password register a new user, so sign out first (agentctl auth logout); without them your user joins', EXIT.usage);
      }
      const joined = await api.request<Membership>('POST', path, { body: {}, asUser: true });
      if (args.use) writeConfigFile(settings.configPath, withAccount(settings.stored, settings.contextName, joined.account_id));
      if (json) return printJson(terminal, joined);
      terminal.err(`Joined ${joined.account_id} as ${joined.role}${args.use ? `, in use in context ${settings.contextName}` : ': agentctl accounts use selects it'}`);
    },
  }),
]);
