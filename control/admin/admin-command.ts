import { parseArgs } from 'node:util';

export const ADMIN_USAGE = `npm run admin -- <command>

  invite create [--account <acc_id> [--role member|admin|viewer|owner]]
      A one-time registration code. Without --account it opens a new account;
      with it the new user joins that account with the role (default member).
  account plan <acc_id|email> <free|pro>
  account exempt <acc_id|email> <true|false>     exempt accounts skip plan quotas
  user role <email> <owner|admin|member|viewer>
  user delete <email>                           with their sessions and personal API keys;
      not an account's last owner
  keys status                                   sealed values per master key id; an older
      key may leave MASTER_KEYS once no value is under it
  keys rotate [--batch-size <rows>] [--limit <rows>]
      Re-encrypts every sealed value not under the current (first) key of MASTER_KEYS,
      online, <rows> rows per transaction (default 100), printing progress. A rerun
      continues where the last one stopped; --limit stops after that many rows.

Reads DATABASE_URL, or the Postgres that \`npm run up\` keeps in .data/. A plan
change reaches the edge at once through REDIS_URL (or \`npm run up\`'s Redis); without
REDIS_URL next to a DATABASE_URL, at the control API's next reconcile pass. The keys
commands read the control API's MASTER_KEYS (or MASTER_KEYS_FILE, MASTER_KEY,
MASTER_KEY_FILE), or \`npm run up\`'s .data/master.key.`;

/** What an operator asked for, checked before anything connects to Postgres. */
export type AdminCommand =
  | { kind: 'help' }
  | { kind: 'invite'; accountId?: string; role: string }
  | { kind: 'plan'; account: string; plan: string }
  | { kind: 'exempt'; account: string; exempt: boolean }
  | { kind: 'role'; email: string; role: string }
  | { kind: 'user-delete'; email: string }
  | { kind: 'keys-status' }
  | { kind: 'keys-rotate'; batchSize: number; limit?: number };

/** The master-key commands, run by control/admin/admin-keys.ts. */
export type KeysCommand = Extract<AdminCommand, { kind: 'keys-status' | 'keys-rotate' }>;

export const isKeysCommand = (command: AdminCommand): command is KeysCommand => command.kind === 'keys-status' || command.kind === 'keys-rotate';

export class UsageError extends Error {}

/**
 * The command line of `npm run admin`, parsed strictly (node:util `parseArgs`): an unknown
 * or misspelled flag, a flag where none belongs, a missing or extra argument is a usage
 * error, never silently ignored, so `--acount acc_…` cannot create an invite for a new
 * account instead.
 */
export function parseAdminCommand(args: string[]): AdminCommand {
  if (args.length === 0 || args[0] === 'help' || args[0] === '--help') return { kind: 'help' };
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(args);
  } catch (error) {
    throw new UsageError(`${(error as Error).message}\n\n${ADMIN_USAGE}`);
  }
  const [noun, verb, ...rest] = parsed.positionals;
  const { account, role, 'batch-size': batchSize, limit } = parsed.values;
  const command = `${noun} ${verb}`;
  if (command !== 'invite create' && (account !== undefined || role !== undefined)) throw new UsageError(`${command} takes no --account or --role\n\n${ADMIN_USAGE}`);
  if (command !== 'keys rotate' && (batchSize !== undefined || limit !== undefined)) throw new UsageError(`${command} takes no --batch-size or --limit\n\n${ADMIN_USAGE}`);
  const exactly = (count: number, names: string) => {
    if (rest.length !== count) throw new UsageError(`${command} takes ${names}\n\n${ADMIN_USAGE}`);
    return rest;
  };
  switch (command) {
    case 'invite create':
      exactly(0, 'no argument besides --account and --role');
      if (role !== undefined && account === undefined) throw new UsageError(`--role needs --account\n\n${ADMIN_USAGE}`);
      return { kind: 'invite', accountId: account, role: role ?? 'member' };
    case 'account plan': {
      const [ref, plan] = exactly(2, '<acc_id|email> <free|pro>');
      return { kind: 'plan', account: ref!, plan: plan! };
    }
    case 'account exempt': {
      const [ref, flag] = exactly(2, '<acc_id|email> <true|false>');
      if (flag !== 'true' && flag !== 'false') throw new UsageError('exempt takes true or false');
      return { kind: 'exempt', account: ref!, exempt: flag === 'true' };
    }
    case 'user role': {
      const [email, newRole] = exactly(2, '<email> <role>');
      return { kind: 'role', email: email!, role: newRole! };
    }
    case 'user delete': {
      const [email] = exactly(1, '<email>');
      return { kind: 'user-delete', email: email! };
    }
    case 'keys status':
      exactly(0, 'no argument');
      return { kind: 'keys-status' };
    case 'keys rotate':
      exactly(0, 'no argument besides --batch-size and --limit');
      return { kind: 'keys-rotate', batchSize: rowCount('--batch-size', batchSize, 100, 10_000), limit: limit === undefined ? undefined : rowCount('--limit', limit, 0, Number.MAX_SAFE_INTEGER) };
    default:
      throw new UsageError(ADMIN_USAGE);
  }
}

/** A whole number of rows from 1 to `max`. */
function rowCount(flag: string, value: string | undefined, fallback: number, max: number): number {
  if (value === undefined) return fallback;
  const rows = Number(value);
  if (!/^[0-9]+$/.test(value) || rows < 1 || rows > max) throw new UsageError(`${flag} takes a whole number of rows from 1 to ${max}, not "${value}"`);
  return rows;
}

const parse = (args: string[]) =>
  parseArgs({
    args,
    strict: true,
    allowPositionals: true,
    options: { account: { type: 'string' }, role: { type: 'string' }, 'batch-size': { type: 'string' }, limit: { type: 'string' } },
  });
