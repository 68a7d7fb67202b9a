import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { systemClock } from '../contract/clock.js';
import { edgeKeyNames } from '../contract/edge-keys.js';
import { createRequestFigureRecorder } from '../contract/request-figure-recorder.js';
import { loadAuthzConfig } from '../authz/config.js';
import { startAuthz } from '../authz/server.js';
import { buildControl } from '../control/compose.js';
import { loadConfig } from '../control/config/config.js';
import { connectDatabase, DEFAULT_POOL, migrate } from '../control/db/database.js';
import { createLogger } from '../control/config/logger.js';
import { createOrchestrator } from '../control/orchestrator/create.js';
import { connectRedis } from '../control/db/redis.js';
import { startLocalEdge } from '../envoy/local-edge/server.js';
import { freePort, startPostgres, startRedis } from '../scripts/lib/local-services.js';
import { controlApiClient } from './api-client.js';
import { summarise, writeResult } from './stats.js';

/**
 * Wake latency (issue 19): a request through the local edge to a parked agent of the
 * default runtime image on podman, from the request sent to the first byte of the answer
 * (the response head). The control API runs in this process, so the bench parks the agent
 * with PlatformScaling.park (the idle parker's call) instead of waiting out its idle
 * period; the wake itself goes the production way: authz's Check, the wake queue, the
 * control API's scale, podman, the projection's routable event, the held Check.
 */
const WAKES = Number(process.env.BENCH_WAKES ?? 20);

async function main(): Promise<void> {
  const workDir = mkdtempSync(join(tmpdir(), 'platform-bench-wake-'));
  chmodSync(workDir, 0o755);
  const postgres = await startPostgres({ dataDir: join(workDir, 'pg'), port: await freePort(), database: 'bench' });
  const redisService = await startRedis({ dataDir: join(workDir, 'redis'), port: await freePort(), persistent: false });
  const instance = `bench-${randomBytes(3).toString('hex')}`;
  const config = loadConfig({
    ...process.env,
    DATABASE_URL: postgres.url,
    REDIS_URL: redisService.url,
    MASTER_KEY: randomBytes(32).toString('base64'),
    CONTROL_PORT: String(await freePort()),
    CONTROL_METRICS_PORT: '0',
    PODMAN_INSTANCE: instance,
    LOG_LEVEL: 'warn',
    TOKEN_RATE_LIMIT_PER_MINUTE: '1000000',
  });
  // The control API as control/main.ts composes it, in this process so the bench can park the agent.
  const db = connectDatabase(config.databaseUrl, DEFAULT_POOL, config.databaseStatementTimeoutMs);
  await migrate(db);
  const [logger, redis] = [createLogger(config.logLevel), connectRedis(config.redisUrl, config.redisKeyPrefix)];
  const driver = createOrchestrator(config, systemClock, logger);
  const { app, services, loops } = buildControl({ config, db, redis, clock: systemClock, logger, driver });
  await loops.start();
  const server = app.listen(config.port, config.host);
  const authzRedis = connectRedis(config.redisUrl, config.redisKeyPrefix);
  const authz = await startAuthz(loadAuthzConfig({ REDIS_URL: config.redisUrl, AUTHZ_GRPC_SOCKET: join(workDir, 'authz.sock'), AUTHZ_METRICS_PORT: '0', AGENT_DOMAIN: config.agentUrl.domain }), {
    redis: authzRedis, clock: systemClock, logger: pino({ level: 'warn' }),
  });
  const figures = createRequestFigureRecorder({ redis: authzRedis, onError: () => undefined });
  const edge = await startLocalEdge({ port: 0, authzAddress: authz.grpcAddress, requestFigures: figures });

  try {
    const call = controlApiClient(`http://${config.host}:${config.port}/v1`);
    const { token, user } = await call('POST', '/auth/register', undefined, { email: 'bench@example.com', password: 'bench password', name: 'Bench' });
    await db('accounts').where({ id: user.account_id }).update({ exempt: true });
    const agent = await call('POST', '/agents', token, {
      name: 'sleeper', access: 'public', api_key: 'sk-bench',
      deploy: { replicas: 1, auto_scale: true, min_replicas: 0, max_replicas: 1, scale_to_zero_after_seconds: 86_400 },
    });
    const host = new URL(agent.url).hostname;
    const upstreams = edgeKeyNames.upstreams(host.split('.')[0]!);
    await until('routable', async () => (await firstByte(edge.port, host)).status === 200);

    console.log(`${WAKES} wakes of ${config.runtimeImage} through the local edge`);
    const samples: number[] = [];
    // Where the time goes: when the driver first reports the replica placed, and routable.
    const phases = { placed: [] as number[], routable: [] as number[] };
    let watch: { started: number; placed?: number; routable?: number } | undefined;
    driver.orchestrator.onChange((id) => {
      if (id !== agent.id || !watch) return;
      const seen = watch;
      void driver.orchestrator.status(id).then((status) => {
        const at = performance.now() - seen.started;
        if (seen.placed === undefined && (status?.replicas.length ?? 0) > 0) seen.placed = at;
        if (seen.routable === undefined && status?.replicas.some((r) => r.state === 'running')) seen.routable = at;
      });
    });
    for (let i = 0; i < WAKES; i++) {
      if (!(await services.platformScaling.park(agent.id, 1))) throw new Error('could not park the agent');
      await until('parked: no upstream, no container', async () =>
        (await redis.scard(upstreams)) === 0 && ((await driver.orchestrator.status(agent.id))?.replicas.length ?? 0) === 0);
      watch = { started: performance.now() };
      const answer = await firstByte(edge.port, host);
      if (answer.status !== 200) throw new Error(`wake ${i + 1} answered ${answer.status}`);
      samples.push(answer.ms);
      phases.placed.push(watch.placed ?? NaN);
      phases.routable.push(watch.routable ?? NaN);
      console.log(`  wake ${i + 1}: ${answer.ms.toFixed(0)} ms (replica placed at ${watch.placed?.toFixed(0)} ms, routable at ${watch.routable?.toFixed(0)} ms)`);
      watch = undefined;
    }
    const result = {
      benchmark: 'wake-podman',
      when: new Date().toISOString(),
      machine: { cpus: cpus().length, model: cpus()[0]?.model, node: process.version },
      image: config.runtimeImage,
      setup: 'local edge → authz (in process) → control API (in process) → podman; request sent to response head, a GET /health to a parked agent',
      podman_poll_interval_ms: config.podman.pollIntervalMs,
      wake: summarise(samples),
      // From the request: the driver reporting the replica's container (the wake reached podman and `podman run` returned), then its port open.
      replica_placed: summarise(phases.placed),
      replica_routable: summarise(phases.routable),
    };
    console.log(JSON.stringify(result, null, 2));
    console.log(`written to ${writeResult('wake', result)}`);
  } finally {
    await edge.close();
    await figures.close();
    await authz.close();
    server.close();
    await loops.stop();
    await services.runner.close();
    await driver.orchestrator.reconcile([]);
    await driver.orchestrator.close();
    await db.destroy();
    redis.disconnect();
    authzRedis.disconnect();
    const leftovers = execFileSync('podman', ['ps', '-aq', '--filter', `label=platform.instance=${instance}`], { encoding: 'utf8' }).split('\n').filter(Boolean);
    if (leftovers.length) execFileSync('podman', ['rm', '-f', '-t', '0', ...leftovers]);
    await redisService.stop();
    await postgres.stop();
    rmSync(workDir, { recursive: true, force: true });
  }
}

async function until(what: string, check: () => Promise<boolean>, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check().catch(() => false)) return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** One GET /health through the edge: its status and the time from sending to the response head. */
function firstByte(port: number, host: string): Promise<{ status: number; ms: number }> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const req = httpRequest({ host: '127.0.0.1', port, path: '/health', headers: { host }, agent: false }, (res) => {
      const ms = performance.now() - started;
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, ms }));
    });
    req.on('error', reject);
    req.end();
  });
}

main().then(() => process.exit(0), (error: unknown) => {
  console.error(error);
  process.exit(1);
});
