import type { SessionGrant, User } from '../../control/schemas/auth.js';
import type { Static } from '@sinclair/typebox';
import { command } from '../command.js';
import { removeConfigFile, writeConfigFile } from '../config-file.js';
import type { Context } from '../context.js';
import { promptHidden } from '../prompt.js';
import { details, printJson } from '../terminal.js';

type Grant = Static<typeof SessionGrant>;

/** Keeps the session for the next runs, bound to the API that issued it. */
function signIn(context: Context, grant: Grant): void {
  writeConfigFile(context.settings.configPath, { api_url: context.settings.apiUrl, token: grant.token, expires_at: grant.expires_at, email: grant.user.email });
  if (context.json) printJson(context.terminal, grant);
  else context.terminal.out(`Signed in as ${grant.user.email} until ${grant.expires_at} (token saved in ${context.settings.configPath})`);
}

const password = (given: string | undefined) => given ?? promptHidden('Password: ', '--password');

export const register = command({
  command: 'register',
  describe: 'Create a user and its account, and sign in',
  builder: (yargs) =>
    yargs
      .option('email', { type: 'string', demandOption: true, describe: 'your email address' })
      .option('password', { type: 'string', describe: 'at least 8 characters; prompted for when omitted on a terminal' })
      .option('name', { type: 'string', demandOption: true, describe: 'your name' })
      .option('invite', { type: 'string', describe: 'an invite code, where registration is by invite' }),
  run: async (args, context) => {
    const body = { email: args.email, password: await password(args.password), name: args.name, ...(args.invite ? { invite_code: args.invite } : {}) };
    signIn(context, await context.api.request<Grant>('POST', '/auth/register', { body }));
  },
});

export const login = command({
  command: 'login',
  describe: `Sign in; the session token is kept in $XDG_CONFIG_HOME/agentctl/config.json (mode 0600)`,
  builder: (yargs) =>
    yargs
      .option('email', { type: 'string', demandOption: true })
      .option('password', { type: 'string', describe: 'prompted for when omitted on a terminal' }),
  run: async (args, context) => {
    signIn(context, await context.api.request<Grant>('POST', '/auth/login', { body: { email: args.email, password: await password(args.password) } }));
  },
});

export const logout = command({
  command: 'logout',
  describe: 'End the session at the API and forget the saved token (the config file is removed)',
  builder: (yargs) => yargs,
  run: async (_args, context) => {
    // A copy of the token (another shell, a leaked file) must stop working too. A personal API
    // key is not a session: the API refuses to end it, so it is only forgotten here.
    if (context.settings.token?.startsWith('ses_')) {
      await context.api.request('POST', '/auth/logout').catch((error: unknown) => {
        context.terminal.err(`The API was not told (${(error as Error).message}); the token stays valid until it expires`);
      });
    }
    removeConfigFile(context.settings.configPath);
    if (!context.json) context.terminal.out('Signed out');
  },
});

export const whoami = command({
  command: 'whoami',
  describe: 'The signed-in user',
  builder: (yargs) => yargs,
  run: async (_args, context) => {
    const user = await context.api.request<Static<typeof User>>('GET', '/auth/me');
    if (context.json) return printJson(context.terminal, user);
    context.terminal.out(details([['email', user.email], ['name', user.name], ['role', user.role], ['account', user.account_id], ['api', context.settings.apiUrl]]));
  },
});
