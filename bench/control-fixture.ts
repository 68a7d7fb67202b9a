import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { systemClock } from '../contract/clock.js';
import { buildControl } from '../control/compose.js';
import { loadConfig, type Config } from '../control/config/config.js';
import { createLogger } from '../control/config/logger.js';
import { connectDatabase, migrate } from '../control/db/database.js';
import { connectRedis } from '../control/db/redis.js';
import { freePort, startPostgres, startRedis } from '../scripts/lib/local-services.js';
import { inMemoryDriver } from '../test/support/in-memory-driver.js';

/** A control API of a benchmark: its own Postgres and Redis, served on loopback, in this process. */
export interface BenchControl {
  config: Config;
  db: ReturnType<typeof connectDatabase>;
  /** `http://127.0.0.1:<port>/v1`. */
  apiUrl: string;
  /** The agent services listener, `http://127.0.0.1:<port>` (no /v1). */
  agentServicesUrl: string;
  /** A file path of the benchmark's own, removed with it. */
  workDir: string;
  close(): Promise<void>;
}

const listening = async (server: Server) => {
  await new Promise((resolve) => server.once('listening', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
};

/**
 * Starts Postgres, Redis and the control API with a driver that runs nothing, so that what
 * is measured is the API's own cost (Koa, validation, knex, Postgres), not a network hop.
 */
export async function startBenchControl(): Promise<BenchControl> {
  const workDir = mkdtempSync(join(tmpdir(), 'platform-bench-'));
  chmodSync(workDir, 0o755);
  const postgres = await startPostgres({ dataDir: join(workDir, 'pg'), port: await freePort(), database: 'bench' });
  const redisService = await startRedis({ dataDir: join(workDir, 'redis'), port: await freePort(), persistent: false });
  const config = loadConfig({
    DATABASE_URL: postgres.url,
    REDIS_URL: redisService.url,
    MASTER_KEY: randomBytes(32).toString('base64'),
    LOG_LEVEL: 'silent',
    TOKEN_RATE_LIMIT_PER_MINUTE: '1000000',
    // One agent takes every benchmark's load: its per-agent limits would be what is measured.
    SESSION_WRITES_PER_SECOND: '100000',
    SESSION_READS_PER_SECOND: '100000',
  });
  const db = connectDatabase(config.databaseUrl);
  await migrate(db);
  const redis = connectRedis(config.redisUrl);
  const { app, agentServices } = buildControl({ config, db, redis, clock: systemClock, logger: createLogger('silent'), driver: inMemoryDriver() });
  const api = createServer(app.callback()).listen(0, '127.0.0.1');
  const services = createServer(agentServices.callback()).listen(0, '127.0.0.1');
  const [apiOrigin, agentServicesUrl] = await Promise.all([listening(api), listening(services)]);
  return {
    config,
    db,
    apiUrl: `${apiOrigin}/v1`,
    agentServicesUrl: agentServicesUrl!,
    workDir,
    close: async () => {
      api.close();
      services.close();
      await db.destroy();
      redis.disconnect();
      await redisService.stop();
      await postgres.stop();
      rmSync(workDir, { recursive: true, force: true });
    },
  };
}
