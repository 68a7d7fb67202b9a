import { mkdtempSync, chmodSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connectDatabase, migrate } from '../../control/db/database.js';
import { freePort, startPostgres, startRedis, type RunningService } from '../../scripts/lib/local-services.js';

/**
 * Mocha global fixtures: one throwaway Postgres and one Redis for the whole run, in a
 * temp dir on free ports. Suites get their own database (a copy of a migrated template)
 * and their own Redis key prefix, so they cannot see each other's data.
 */
let services: RunningService[] = [];
let workDir = '';

export const TEMPLATE_DATABASE = 'platform_template';

export async function mochaGlobalSetup(): Promise<void> {
  workDir = mkdtempSync(join(tmpdir(), 'platform-test-'));
  chmodSync(workDir, 0o755); // the postgres user must be able to reach its data dir inside
  // A throwaway cluster needs no durability; it makes tests faster. Suites that run `npm run up` pass it on (scripts/lib/up-settings.ts).
  process.env.PG_FSYNC = 'off';
  const postgres = await startPostgres({ dataDir: join(workDir, 'postgres'), port: await freePort(), database: TEMPLATE_DATABASE, fsync: false });
  services.push(postgres);
  const redis = await startRedis({ dataDir: join(workDir, 'redis'), port: await freePort(), persistent: false });
  services.push(redis);

  const template = connectDatabase(postgres.url, { min: 0, max: 1 });
  await migrate(template);
  await template.destroy();

  process.env.TEST_TEMPLATE_DATABASE_URL = postgres.url;
  process.env.TEST_REDIS_URL = redis.url;
}

export async function mochaGlobalTeardown(): Promise<void> {
  for (const service of services.reverse()) await service.stop().catch(() => undefined);
  services = [];
  if (workDir) rmSync(workDir, { recursive: true, force: true });
}
