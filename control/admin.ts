// First: on another Node this stops the program before any other module loads.
import '../contract/require-supported-node.js';
import { ADMIN_USAGE, isKeysCommand, parseAdminCommand, UsageError, type AdminCommand, type KeysCommand } from './admin/admin-command.js';
import { runKeysCommand } from './admin/admin-keys.js';
import { systemClock } from '../contract/clock.js';
import { loadAdminRedis, loadDatabaseUrl } from './config/config.js';
import { ConfigError } from '../contract/settings-reader.js';
import { connectDatabase, migrate } from './db/database.js';
import { EdgeProjection } from './edge/projection.js';
import { PlatformError } from './domain/errors.js';
import { createLogger } from './config/logger.js';
import { connectRedis } from './db/redis.js';
import { AdminService } from './services/admin-service.js';
import { EdgeSync } from './services/edge-sync.js';

async function run(command: Exclude<AdminCommand, { kind: 'help' } | KeysCommand>, admin: AdminService): Promise<string> {
  switch (command.kind) {
    case 'invite':
      return `Invite code (shown once): ${await admin.createInvite(command.accountId, command.role as never)}`;
    case 'plan':
      await admin.setPlan(command.account, command.plan);
      return `Plan of ${command.account} is now ${command.plan}`;
    case 'exempt':
      await admin.setExempt(command.account, command.exempt);
      return `${command.account} is ${command.exempt ? 'now exempt from' : 'now subject to'} plan quotas`;
    case 'role':
      await admin.setRole(command.email, command.role);
      return `${command.email} now has role ${command.role}`;
    case 'user-delete':
      await admin.deleteUser(command.email);
      return `${command.email} is deleted; their sessions and personal API keys no longer work`;
  }
}

async function main(): Promise<void> {
  const command = parseAdminCommand(process.argv.slice(2));
  if (command.kind === 'help') {
    console.log(ADMIN_USAGE);
    return;
  }
  if (isKeysCommand(command)) return runKeysCommand(command, process.env);
  const db = connectDatabase(loadDatabaseUrl(process.env), { min: 0, max: 2 });
  const redisSettings = loadAdminRedis(process.env);
  const redis = redisSettings ? connectRedis(redisSettings.url, redisSettings.keyPrefix) : undefined;
  // A plan change re-projects agents' limits only; the command never rebuilds upstreams, so it reads no job.
  const noJobs = { status: async () => null };
  const edge = redis ? new EdgeSync(db, new EdgeProjection(redis), noJobs, createLogger('warn', 'admin')) : undefined;
  try {
    await migrate(db);
    console.log(await run(command, new AdminService(db, systemClock, edge)));
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
