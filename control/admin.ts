import { systemClock } from './clock.js';
import { ConfigError, loadAdminRedisUrl, loadDatabaseUrl } from './config.js';
import { connectDatabase, migrate } from './db/database.js';
import { EdgeProjection } from './edge/projection.js';
import { PlatformError } from './errors.js';
import { createLogger } from './logger.js';
import { connectRedis } from './redis.js';
import { AdminService } from './services/admin-service.js';
import { EdgeSync } from './services/edge-sync.js';

const USAGE = `npm run admin -- <command>

  invite create [--account <acc_id> [--role member|admin|viewer|owner]]
      A one-time registration code. Without --account it opens a new account;
      with it the new user joins that account with the role (default member).
  account plan <acc_id|email> <free|pro>
  account exempt <acc_id|email> <true|false>     exempt accounts skip plan quotas
  user role <email> <owner|admin|member|viewer>

Reads DATABASE_URL, or the Postgres that \`npm run up\` keeps in .data/. A plan
change reaches the edge at once through REDIS_URL (or \`npm run up\`'s Redis); without
REDIS_URL next to a DATABASE_URL, at the control API's next reconcile pass.`;

async function run(args: string[], admin: AdminService): Promise<string> {
  const [noun, verb, ...rest] = args;
  const option = (name: string) => {
    const at = rest.indexOf(`--${name}`);
    return at >= 0 ? rest[at + 1] : undefined;
  };
  switch (`${noun} ${verb}`) {
    case 'invite create':
      return `Invite code (shown once): ${await admin.createInvite(option('account'), (option('role') ?? 'member') as never)}`;
    case 'account plan':
      await admin.setPlan(required(rest[0], 'account'), required(rest[1], 'plan'));
      return `Plan of ${rest[0]} is now ${rest[1]}`;
    case 'account exempt': {
      const flag = required(rest[1], 'true|false');
      if (!['true', 'false'].includes(flag)) throw new UsageError('exempt takes true or false');
      await admin.setExempt(required(rest[0], 'account'), flag === 'true');
      return `${rest[0]} is ${flag === 'true' ? 'now exempt from' : 'now subject to'} plan quotas`;
    }
    case 'user role':
      await admin.setRole(required(rest[0], 'email'), required(rest[1], 'role'));
      return `${rest[0]} now has role ${rest[1]}`;
    default:
      throw new UsageError(USAGE);
  }
}

class UsageError extends Error {}

function required(value: string | undefined, what: string): string {
  if (!value) throw new UsageError(`missing <${what}>\n\n${USAGE}`);
  return value;
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  if (args.length === 0 || args[0] === 'help' || args[0] === '--help') {
    console.log(USAGE);
    return;
  }
  const db = connectDatabase(loadDatabaseUrl(process.env), { min: 0, max: 2 });
  const redisUrl = loadAdminRedisUrl(process.env);
  const redis = redisUrl ? connectRedis(redisUrl) : undefined;
  const edge = redis ? new EdgeSync(db, new EdgeProjection(redis), undefined, createLogger('warn', 'admin')) : undefined;
  try {
    await migrate(db);
    console.log(await run(args, new AdminService(db, systemClock, edge)));
  } finally {
    redis?.disconnect();
    await db.destroy();
  }
}

main().catch((error: unknown) => {
  if (error instanceof UsageError || error instanceof PlatformError || error instanceof ConfigError) {
    console.error(error.message);
    process.exit(2);
  }
  console.error(error);
  process.exit(1);
});
