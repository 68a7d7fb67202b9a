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
import { instrumentOrchestrator } from '../control/orchestrator/instrumented.js';
import { connectRedis } from '../control/db/redis.js';
import { startLocalEdge } from '../envoy/local-edge/server.js';
import { freePort, startPostgres, startRedis } from '../scripts/lib/local-services.js';
import { controlApiClient } from './api-client.js';
import { summarise, writeResult } from './stats.js';

/**
 * Wake latency (issues 19 and 40): a request through the local edge to a parked agent of
 * the default runtime image on podman, from the request sent to the first byte of the answer
 * (the response head), for each way a parked agent wakes:
 * - warm: its replica frozen (`podman pause`), thawed;
 * - cold: its replica stopped, started again from its stopped container;
 * - fresh: no container kept, a new one created and started (the only wake before issue 40).
 * - busy (only with BENCH_WAKE_KINDS naming it): a warm wake just after another agent was
 *   scaled down from 2 replicas to 1, so the wake's driver step follows that retirement's in
 *   the driver's queue. Its drain (DRAIN_SECONDS) and stop run beside the queue: a wake
 *   should not wait for them.
 * The control API runs in this process, so the bench parks the agent with
 * PlatformScaling.park (the idle parker's call) instead of waiting out its idle period; the
 * wake itself goes the production way: authz's Check, the wake queue, the control API's
 * scale, podman, the projection's routable event, the held Check.
 */
const WAKES = Number(process.env.BENCH_WAKES ?? 20);

type WakeKind = 'warm' | 'cold' | 'fresh' | 'busy';
const KINDS = (process.env.BENCH_WAKE_KINDS ?? 'warm,cold,fresh').split(',') as WakeKind[];

/** Where one wake's time went, in ms from the request sent. */
interface WakeSample {
  firstByte: number;
  /** The scale reached the driver: authz's Check, the wake queue, the control API's pick-up, its transaction and queue. */
  scaleCalled: number;
  /** The driver had thawed or started the replica (or created and started one). */
  replicaUp: number;
  /** The driver reported the replica routable. */
  routable: number;
}

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
  const started = await createOrchestrator(config, systemClock, logger);
  // When each scale reaches the driver: the end of the control API's part of a wake.
  const scaleCalls: { agentId: string; at: number }[] = [];
  let scalesInFlight = 0;
  const orchestrator = instrumentOrchestrator(started.orchestrator, () => undefined);
  const scale = orchestrator.scale;
  orchestrator.scale = (agentId, count, parked) => {
    scaleCalls.push({ agentId, at: performance.now() });
    scalesInFlight += 1;
    return scale(agentId, count, parked).finally(() => (scalesInFlight -= 1));
  };
  const driver = { ...started, orchestrator };
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
    const podmanDriver = started.orchestrator as { coldWake?: Promise<{ mode: string; reason?: string }> | null };
    const coldWake = (await podmanDriver.coldWake) ?? null;
    const results: Record<WakeKind, WakeSample[]> = { warm: [], cold: [], fresh: [], busy: [] };
    // The other agent a busy wake follows in the driver's queue: two replicas, one retired before each wake.
    const neighbour = KINDS.includes('busy')
      ? await call('POST', '/agents', token, { name: 'neighbour', access: 'public', api_key: 'sk-bench', deploy: { replicas: 2 } })
      : null;
    for (const kind of KINDS) {
      const agent = await call('POST', '/agents', token, {
        name: `sleeper-${kind}`, access: 'public', api_key: 'sk-bench',
        deploy: { replicas: 1, auto_scale: true, min_replicas: 0, max_replicas: 1, scale_to_zero_after_seconds: 86_400, warm_park_seconds: kind === 'warm' || kind === 'busy' ? 86_400 : 0 },
      });
      const host = new URL(agent.url).hostname;
      const upstreams = edgeKeyNames.upstreams(host.split('.')[0]!);
      await until('routable', async () => (await firstByte(edge.port, host)).status === 200);
      console.log(`${WAKES} ${kind} wakes of ${config.runtimeImage} through the local edge`);
      let watch: { started: number; routable?: number } | undefined;
      orchestrator.onChange((id) => {
        if (id !== agent.id || !watch) return;
        const seen = watch;
        void orchestrator.status(id).then((status) => {
          if (seen.routable === undefined && status?.replicas.some((r) => r.state === 'running' && r.address)) seen.routable = performance.now() - seen.started;
        });
      });
      for (let i = 0; i < WAKES; i++) {
        if (!(await services.platformScaling.park(agent.id, 1))) throw new Error('could not park the agent');
        await until('parked: no upstream, no replica', async () =>
          (await redis.scard(upstreams)) === 0 && ((await orchestrator.status(agent.id))?.replicas.length ?? 0) === 0);
        const frozen = kind === 'warm' || kind === 'busy';
        await until(`the replica ${frozen ? 'paused' : 'stopped'}`, async () => containerStates(instance, agent.id).every((state) => state.startsWith(frozen ? 'paused' : 'exited')));
        // Today's fresh start: the parked container is dropped (a count of 0 without parking), so a wake creates one.
        if (kind === 'fresh') {
          await orchestrator.scale(agent.id, 0);
          await until('no container', async () => containerStates(instance, agent.id).length === 0);
        }
        scaleCalls.length = 0;
        // The park's own steps over (its scale's drain, stop and tick; the tick podman's death event asks
        // for, a second or so later): a real wake comes long after them.
        await until('the park done', async () => scalesInFlight === 0);
        await new Promise((resolve) => setTimeout(resolve, 1_500));
        if (neighbour && kind === 'busy') {
          await until("the neighbour's two replicas routed", async () =>
            ((await orchestrator.status(neighbour.id))?.replicas ?? []).filter((r) => r.state === 'running' && r.address).length === 2);
          await call('POST', `/agents/${neighbour.id}/scale`, token, { direction: 'down', count: 1 });
          await until("the neighbour's scale-down at the driver", async () => scaleCalls.some((c) => c.agentId === neighbour.id));
          scaleCalls.length = 0;
        }
        const wallStart = Date.now();
        watch = { started: performance.now() };
        const answer = await firstByte(edge.port, host);
        if (answer.status !== 200) throw new Error(`${kind} wake ${i + 1} answered ${answer.status}`);
        const events = (await orchestrator.status(agent.id))?.events.filter((e) => e.at.getTime() >= wallStart) ?? [];
        const up = events.find((e) => e.type === 'woken' || e.type === 'started');
        const sample: WakeSample = {
          firstByte: answer.ms,
          scaleCalled: (scaleCalls.find((c) => c.agentId === agent.id)?.at ?? NaN) - watch.started,
          replicaUp: up ? up.at.getTime() - wallStart : NaN,
          routable: watch.routable ?? NaN,
        };
        results[kind].push(sample);
        console.log(`  ${kind} wake ${i + 1}: ${sample.firstByte.toFixed(0)} ms (scale at ${sample.scaleCalled.toFixed(0)}, replica up at ${sample.replicaUp.toFixed(0)}, routable at ${sample.routable.toFixed(0)} ms)`);
        watch = undefined;
        if (neighbour && kind === 'busy') await call('POST', `/agents/${neighbour.id}/scale`, token, { direction: 'up', count: 1 });
      }
    }
    const phasesOf = (samples: WakeSample[]) => ({
      wake: summarise(samples.map((s) => s.firstByte)),
      scale_reached_driver: summarise(samples.map((s) => s.scaleCalled)),
      replica_up: summarise(samples.map((s) => s.replicaUp)),
      replica_routable: summarise(samples.map((s) => s.routable)),
    });
    if (!['warm', 'cold', 'fresh'].every((kind) => KINDS.includes(kind as WakeKind)) || KINDS.includes('busy')) {
      console.log(JSON.stringify(Object.fromEntries(KINDS.map((kind) => [kind, phasesOf(results[kind])])), null, 2));
      console.log('not written: BENCH_WAKE_KINDS is not warm, cold and fresh');
      return;
    }
    const warm = phasesOf(results.warm);
    const cold = phasesOf(results.cold);
    const fresh = phasesOf(results.fresh);
    const result = {
      benchmark: 'wake-podman',
      when: new Date().toISOString(),
      machine: { cpus: cpus().length, model: cpus()[0]?.model, node: process.version },
      image: config.runtimeImage,
      setup: 'local edge → authz (in process) → control API (in process) → podman; request sent to response head, a GET /health to a parked agent',
      podman_poll_interval_ms: config.podman.pollIntervalMs,
      // What the driver's probe found at start: whether cold wakes could restore a checkpoint here.
      checkpoint_restore: coldWake,
      warm,
      cold,
      fresh,
      fresh_over_warm_p50: round(fresh.wake.p50_ms / warm.wake.p50_ms),
      fresh_over_cold_p50: round(fresh.wake.p50_ms / cold.wake.p50_ms),
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
    await started.orchestrator.reconcile([]);
    await started.orchestrator.close();
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

/** The states podman shows for one agent's containers, lower case: `paused`, `exited (0) 2 seconds ago`, ... */
function containerStates(instance: string, agentId: string): string[] {
  return execFileSync('podman', ['ps', '-a', '--filter', `label=platform.instance=${instance}`, '--filter', `label=platform.agent-id=${agentId}`, '--format', '{{.State}}'], { encoding: 'utf8' })
    .split('\n').filter(Boolean).map((state) => state.toLowerCase());
}

const round = (value: number) => Math.round(value * 100) / 100;

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
