import type { SessionGrant, User } from '../../control/schemas/auth.js';
import type { Static } from '@sinclair/typebox';
import { command, group } from '../command.js';
import { removeConfigFile, writeConfigFile } from '../config-file.js';
import { withoutSession, withSession } from '../stored-contexts.js';
import type { Context } from '../context.js';
import { promptHidden } from '../prompt.js';
import { LoopbackReceiver, tryOpenBrowser } from '../sso-login.js';
import { details, printJson } from '../terminal.js';

type Grant = Static<typeof SessionGrant>;

/** Keeps the session for the next runs in the context in use, bound to the API that issued it. */
export function signIn(context: Context, grant: Grant): void {
  const { configPath, stored, contextName, apiUrl } = context.settings;
  writeConfigFile(configPath, withSession(stored, contextName, { api_url: apiUrl, token: grant.token, expires_at: grant.expires_at, email: grant.user.email }));
  if (context.json) printJson(context.terminal, grant);
  else context.terminal.out(`Signed in as ${grant.user.email} until ${grant.expires_at} (token saved in ${configPath}, context ${contextName})`);
}

export const password = (given: string | undefined) => given ?? promptHidden('Password: ', '--password');

export const register = command({
  command: 'register',
  examples: [["$0 auth register --email ada@example.com --name 'Ada L'", "the password is asked for on a terminal"]],
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
  examples: [
    ["$0 auth login --email ada@example.com", "the password is asked for on a terminal"],
    ["$0 auth login --context staging --email ada@example.com", "sign in to another context (agentctl context add)"],
    ["$0 auth login --sso acme", "sign in through the identity provider of the account whose SSO slug is acme, in the browser"],
  ],
  describe: `Sign in; the session token is kept for the context in use in $XDG_CONFIG_HOME/agentctl/config.json (mode 0600)`,
  builder: (yargs) =>
    yargs
      .option('email', { type: 'string', describe: 'the email address you registered with' })
      .option('password', { type: 'string', describe: 'prompted for when omitted on a terminal' })
      .option('sso', { type: 'string', describe: "sign in with single sign-on: the account's SSO slug (its owners see it in GET /account/sso)" })
      .option('browser', { type: 'boolean', default: true, describe: 'with --sso, open the sign-in page in the browser (--no-browser: only print its URL)' })
      .conflicts('sso', ['email', 'password'])
      .check((args) => (args.sso !== undefined || args.email !== undefined ? true : 'give --email, or --sso <account-slug>')),
  run: async (args, context) => {
    if (args.sso !== undefined) return signIn(context, await signInWithSso(context, args.sso, args.browser));
    signIn(context, await context.api.request<Grant>('POST', '/auth/login', { body: { email: args.email, password: await password(args.password) } }));
  },
});

/** The browser signs in at the identity provider; the API sends it back to a loopback listener with a one-time code, traded here for the session. */
async function signInWithSso(context: Context, slug: string, openBrowser: boolean): Promise<Grant> {
  const receiver = await LoopbackReceiver.open();
  try {
    const start = new URL(`${context.api.baseUrl}/auth/sso/${encodeURIComponent(slug)}/start`);
    start.searchParams.set('redirect_uri', receiver.redirectUri);
    context.terminal.err(`Open this address to sign in (waiting for the browser on ${receiver.redirectUri}):\n${start.href}`);
    if (openBrowser) tryOpenBrowser(start.href);
    const code = await receiver.code();
    return await context.api.request<Grant>('POST', '/auth/sso/exchange', { body: { code } });
  } finally {
    receiver.close();
  }
}

export const logout = command({
  command: 'logout',
  examples: [["$0 auth logout", ""]],
  describe: "End the session at the API and forget the context's saved token (the file goes with the last context)",
  builder: (yargs) => yargs,
  run: async (_args, context) => {
    // A copy of the token (another shell, a leaked file) must stop working too. A personal API
    // key is not a session: the API refuses to end it, so it is only forgotten here.
    if (context.settings.token?.startsWith('ses_')) {
      await context.api.request('POST', '/auth/logout').catch((error: unknown) => {
        context.terminal.err(`The API was not told (${(error as Error).message}); the token stays valid until it expires`);
      });
    }
    const { configPath, stored, contextName } = context.settings;
    const remaining = withoutSession(stored, contextName);
    if (remaining) writeConfigFile(configPath, remaining);
    else removeConfigFile(configPath);
    if (!context.json) context.terminal.out('Signed out');
  },
});

export const whoami = command({
  command: 'whoami',
  examples: [["$0 auth whoami", ""], ["$0 auth whoami --context staging", "as whom, on another context"]],
  describe: 'The signed-in user',
  builder: (yargs) => yargs,
  run: async (_args, context) => {
    const user = await context.api.request<Static<typeof User>>('GET', '/auth/me');
    if (context.json) return printJson(context.terminal, user);
    context.terminal.out(details([['email', user.email], ['name', user.name], ['role', user.role], ['account', user.account_id], ['api', context.settings.apiUrl], ['context', context.settings.contextName]], context.terminal.paint));
  },
});

export const auth = group('auth', 'Sign up, sign in and out, and show who is signed in', [register, login, logout, whoami]);
