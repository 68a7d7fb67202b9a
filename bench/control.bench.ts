import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { cpus, tmpdir } from 'node:os';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { systemClock } from '../contract/clock.js';
import { loadConfig } from '../control/config/config.js';
import { buildControl } from '../control/compose.js';
import { inMemoryDriver } from '../test/support/in-memory-driver.js';
import { connectDatabase, migrate } from '../control/db/database.js';
import { createLogger } from '../control/config/logger.js';
import { connectRedis } from '../control/db/redis.js';
import { freePort, startPostgres, startRedis } from '../scripts/lib/local-services.js';
import { controlApiClient } from './api-client.js';
import { runConcurrently, summarise, timed, writeResult } from './stats.js';

/**
 * Control API latency on real Postgres and Redis: creating agents (10,000, by 8
 * concurrent clients) and listing a page of 100 among them. The server runs in this
 * process, so figures include Koa, validation, knex and Postgres, not a network hop.
 */
const AGENTS = Number(process.env.BENCH_AGENTS ?? 10_000);
const CONCURRENCY = 8;
const LIST_REQUESTS = 500;

async function main(): Promise<void> {
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
  });
  const db = connectDatabase(config.databaseUrl);
  await migrate(db);
  const redis = connectRedis(config.redisUrl);
  // The API's own cost is measured: a driver that runs nothing.
  const { app } = buildControl({ config, db, redis, clock: systemClock, logger: createLogger('silent'), driver: inMemoryDriver() });
  const server = createServer(app.callback()).listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;

  try {
    const call = controlApiClient(base);
    const { token, user } = await call('POST', '/auth/register', undefined, { email: 'bench@example.com', password: 'bench password', name: 'Bench' });
    await db('accounts').where({ id: user.account_id }).update({ exempt: true });

    console.log(`creating ${AGENTS} agents with ${CONCURRENCY} concurrent clients`);
    const createSamples = await runConcurrently(AGENTS, CONCURRENCY, (i) =>
      call('POST', '/agents', token, { name: `agent ${i}`, tags: [i % 2 ? 'odd' : 'even'], metadata: { n: String(i) } }),
    );

    console.log(`listing a page of 100, ${LIST_REQUESTS} times, one client`);
    const listSamples: number[] = [];
    for (let i = 0; i < LIST_REQUESTS; i++) {
      const page = 1 + (i % (AGENTS / 100));
      listSamples.push(await timed(() => call('GET', `/agents?page_size=100&page=${page}`, token)));
    }
    const taggedSamples: number[] = [];
    for (let i = 0; i < 100; i++) taggedSamples.push(await timed(() => call('GET', '/agents?page_size=100&tag=odd', token)));

    const result = {
      benchmark: 'control-api',
      when: new Date().toISOString(),
      machine: { cpus: cpus().length, model: cpus()[0]?.model, node: process.version },
      agents: AGENTS,
      create_agent: { concurrency: CONCURRENCY, ...summarise(createSamples) },
      list_agents_page_100: { concurrency: 1, ...summarise(listSamples) },
      list_agents_page_100_tag_filter: { concurrency: 1, ...summarise(taggedSamples) },
    };
    console.log(JSON.stringify(result, null, 2));
    console.log(`written to ${writeResult('control-api', result)}`);
  } finally {
    server.close();
    await db.destroy();
    redis.disconnect();
    await redisService.stop();
    await postgres.stop();
    rmSync(workDir, { recursive: true, force: true });
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
