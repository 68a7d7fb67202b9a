import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { createServer as createTcpServer, type AddressInfo, type Socket } from 'node:net';
import { systemClock } from '../contract/clock.js';
import { buildControl } from '../control/compose.js';
import { inMemoryDriver } from './support/in-memory-driver.js';
import { loadConfig } from '../control/config/config.js';
import { connectDatabase } from '../control/db/database.js';
import { createLogger } from '../control/config/logger.js';
import { connectRedis } from '../control/db/redis.js';
import { freePort } from '../scripts/lib/local-services.js';

/**
 * GET /livez and GET /readyz of the control API, as Nomad's and Consul's checks call them:
 * readiness follows Postgres and Redis and names the one that does not answer; liveness
 * never looks at them, so an outage of either cannot get every copy restarted.
 */

interface ProbedControl {
  root: string;
  close(): Promise<void>;
}

/** The control API on port 0, with Postgres and Redis at the given URLs (reachable or not). */
async function startControlWith(urls: { databaseUrl: string; redisUrl: string }): Promise<ProbedControl> {
  const config = loadConfig({ DATABASE_URL: urls.databaseUrl, REDIS_URL: urls.redisUrl, MASTER_KEY: randomBytes(32).toString('base64'), LOG_LEVEL: 'silent' });
  const db = connectDatabase(config.databaseUrl, { min: 0, max: 1 });
  const redis = connectRedis(config.redisUrl);
  const { app } = buildControl({ config, db, redis, clock: systemClock, logger: createLogger('silent'), driver: inMemoryDriver() });
  const server: Server = createServer(app.callback());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    root: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await db.destroy();
      redis.disconnect();
    },
  };
}

async function getJson(url: string): Promise<{ status: number; body: any }> {
  const response = await fetch(url);
  return { status: response.status, body: await response.json() };
}

/** A TCP server that accepts connections and never answers: a hung Redis. */
async function startSilentServer(): Promise<{ port: number; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server = createTcpServer((socket) => sockets.add(socket));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

describe('control API probes: /livez and /readyz', function () {
  let postgresUrl: string;
  let redisUrl: string;
  const opened: ProbedControl[] = [];
  const start = async (urls: { databaseUrl: string; redisUrl: string }) => {
    const control = await startControlWith(urls);
    opened.push(control);
    return control;
  };

  before(function () {
    const template = process.env.TEST_TEMPLATE_DATABASE_URL;
    const redis = process.env.TEST_REDIS_URL;
    if (!template || !redis) throw new Error('Run tests through mocha: test/support/global.ts starts Postgres and Redis');
    // The maintenance database: a connection to the template would block copying it.
    postgresUrl = template.replace(/\/[^/]+$/, '/postgres');
    redisUrl = redis;
  });

  after(async () => {
    await Promise.all(opened.map((control) => control.close()));
  });

  it('answers 200 on all three, outside /v1, while Postgres and Redis answer', async () => {
    const control = await start({ databaseUrl: postgresUrl, redisUrl });
    assert.deepEqual(await getJson(`${control.root}/livez`), { status: 200, body: { status: 'ok' } });
    const ready = { status: 200, body: { status: 'ok', dependencies: { postgres: 'ok', redis: 'ok' } } };
    assert.deepEqual(await getJson(`${control.root}/readyz`), ready);
    assert.deepEqual(await getJson(`${control.root}/healthz`), ready, '/healthz is the older name of /readyz');
    assert.equal((await fetch(`${control.root}/v1/livez`)).status, 404);
  });

  it('is not ready (503 NOT_READY naming Redis) while Redis is unreachable, yet stays live', async () => {
    const control = await start({ databaseUrl: postgresUrl, redisUrl: `redis://127.0.0.1:${await freePort()}` });
    const readiness = await getJson(`${control.root}/readyz`);
    assert.equal(readiness.status, 503);
    assert.equal(readiness.body.code, 'NOT_READY');
    assert.equal(readiness.body.message, 'Not ready: redis does not answer');
    assert.deepEqual(readiness.body.details, { dependencies: { postgres: 'ok', redis: 'unavailable' } });
    assert.equal((await fetch(`${control.root}/healthz`)).status, 503);
    assert.deepEqual(await getJson(`${control.root}/livez`), { status: 200, body: { status: 'ok' } });
  });

  it('names Postgres when Postgres is unreachable, and both when both are', async () => {
    const closedPostgres = postgresUrl.replace(/:\d+\//, `:${await freePort()}/`);
    const withoutPostgres = await start({ databaseUrl: closedPostgres, redisUrl });
    const onlyPostgres = await getJson(`${withoutPostgres.root}/readyz`);
    assert.equal(onlyPostgres.status, 503);
    assert.deepEqual(onlyPostgres.body.details.dependencies, { postgres: 'unavailable', redis: 'ok' });
    assert.equal((await fetch(`${withoutPostgres.root}/livez`)).status, 200);

    const withNeither = await start({ databaseUrl: closedPostgres, redisUrl: `redis://127.0.0.1:${await freePort()}` });
    const neither = await getJson(`${withNeither.root}/readyz`);
    assert.equal(neither.status, 503);
    assert.equal(neither.body.message, 'Not ready: postgres and redis do not answer');
    assert.equal((await fetch(`${withNeither.root}/livez`)).status, 200);
  });

  it('answers 503 naming Redis when Redis accepts the connection but never replies', async () => {
    const silent = await startSilentServer();
    try {
      const control = await start({ databaseUrl: postgresUrl, redisUrl: `redis://127.0.0.1:${silent.port}` });
      const readiness = await getJson(`${control.root}/readyz`);
      assert.equal(readiness.status, 503);
      assert.deepEqual(readiness.body.details.dependencies, { postgres: 'ok', redis: 'unavailable' });
      assert.equal((await fetch(`${control.root}/livez`)).status, 200);
    } finally {
      await silent.close();
    }
  });
});
