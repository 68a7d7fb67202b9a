import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { Redis } from 'ioredis';
import { edgeKeyNames, usageMonthOf } from '../contract/edge-keys.js';
import { loadAuthorizationService } from '../proto/load.js';
import type { AuthzServerKind } from '../authz/config.js';
import { freePort } from '../scripts/lib/local-services.js';
import { checkLoad, envoyShapedCheckRequest, paced } from './check-load.js';
import { h2loadChecks } from './h2load.js';
import { treeCpuSeconds } from './process-cpu.js';
import { medianRoundsInTurn, runConcurrently, summarise, type LatencySummary } from './stats.js';

/**
 * Issue 21's figures: authz's CPU per allowed Check against a no-op grpc-js server's, each
 * server a process of its own (CPU read from /proc, the load generator here in the bench
 * process), Checks per CPU-second, latency at 1, 16 and 64 in flight and at half the
 * maximum rate (and the no-op's at the same rate: the machine's own tail), and throughput
 * with 1 and 2 workers. A third server, the no-op on authz's own gRPC server, splits authz's
 * CPU into what serving gRPC costs and what the decision and Redis add. authz on grpc-js's
 * server (AUTHZ_SERVER=grpc-js, the fallback) has its CPU per Check and throughput measured
 * beside authz on its own. The CPU and the half-maximum latency are measured twice: from grpc-js's client in the bench process, and
 * from h2load (bench/h2load.ts), a C caller that leaves the server the second core.
 */
export interface ServerProcess {
  address: string;
  cpuSeconds(): number;
  stop(): Promise<void>;
}

const CHECKS = Number(process.env.BENCH_CPU_CHECKS ?? 20_000);

function serverProcess(child: ChildProcess, address: string): ServerProcess {
  return {
    address,
    cpuSeconds: () => treeCpuSeconds(child.pid!),
    async stop() {
      const exited = once(child, 'exit');
      child.kill('SIGTERM');
      await exited;
    },
  };
}

/** The no-op server (bench/noop-authz-server.ts): grpc-js's, or with `lean` authz's own gRPC server. */
async function startNoop(lean = false): Promise<ServerProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'bench/noop-authz-server.ts', ...(lean ? ['--lean'] : [])], { stdio: ['ignore', 'pipe', 'inherit'] });
  const [line] = (await once(createInterface({ input: child.stdout! }), 'line')) as [string];
  return serverProcess(child, `127.0.0.1:${(JSON.parse(line) as { port: number }).port}`);
}

/**
 * How a caller reaches authz: its Unix socket, as Envoy reaches its sidecar and `npm run up`
 * runs it, or TCP (AUTHZ_GRPC_LISTEN), which h2load needs (it has no Unix socket client).
 */
export type AuthzTransport = 'socket' | 'tcp';

/** authz as it runs in production: `authz/main.ts`, AUTHZ_WORKERS processes, on AUTHZ_SERVER's gRPC server. */
export async function startAuthzProcess(redisUrl: string, agentDomain: string, workers: number, server: AuthzServerKind = 'own', transport: AuthzTransport = 'tcp'): Promise<ServerProcess> {
  const [grpcPort, metricsPort] = [await freePort(), await freePort()];
  const socketDir = transport === 'socket' ? mkdtempSync(join(tmpdir(), 'authz-bench-')) : undefined;
  const listen = socketDir ? { AUTHZ_GRPC_SOCKET: join(socketDir, 'authz.sock') } : { AUTHZ_GRPC_LISTEN: `127.0.0.1:${grpcPort}` };
  const child = spawn(process.execPath, ['--import', 'tsx', 'authz/main.ts'], {
    env: { PATH: process.env.PATH, REDIS_URL: redisUrl, AGENT_DOMAIN: agentDomain, ...listen, AUTHZ_METRICS_PORT: String(metricsPort), AUTHZ_WORKERS: String(workers), AUTHZ_SERVER: server },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  if (socketDir) child.once('exit', () => rmSync(socketDir, { recursive: true, force: true }));
  // Ready when every worker shows in /metrics (one series of agent_platform_authz_worker_checks_total each).
  for (let attempt = 0; ; attempt += 1) {
    const text = await fetch(`http://127.0.0.1:${metricsPort}/metrics`).then((response) => response.text(), () => '');
    if ((text.match(/^agent_platform_authz_worker_checks_total\{/gm) ?? []).length === workers) break;
    if (attempt > 300) throw new Error(`authz with ${workers} workers did not start`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return serverProcess(child, socketDir ? `unix:${join(socketDir, 'authz.sock')}` : `127.0.0.1:${grpcPort}`);
}

interface CpuRun {
  /** With medianCpuRuns: every round's figure, the median first reported. */
  rounds_cpu_us_per_check?: number[];
  checks: number;
  allowed: number;
  per_second: number;
  cpu_seconds: number;
  cpu_us_per_check: number;
  checks_per_cpu_second: number;
}

/** `count` Checks at 64 in flight after a warm-up, and the server's CPU over them. */
async function cpuRun(server: ServerProcess, host: string, count = CHECKS): Promise<CpuRun> {
  const load = checkLoad(server.address, host);
  try {
    await runConcurrently(2_000, 64, (i) => load.check(i));
    let allowed = 0;
    const cpuBefore = server.cpuSeconds();
    const started = performance.now();
    await runConcurrently(count, 64, async (i) => {
      if (await load.check(i)) allowed += 1;
    });
    const seconds = (performance.now() - started) / 1000;
    const cpu = server.cpuSeconds() - cpuBefore;
    return {
      checks: count,
      allowed,
      per_second: Math.round(count / seconds),
      cpu_seconds: round(cpu),
      cpu_us_per_check: round((cpu / count) * 1e6),
      checks_per_cpu_second: Math.round(count / cpu),
    };
  } finally {
    load.close();
  }
}

async function latencies(server: ServerProcess, host: string): Promise<Record<string, LatencySummary>> {
  const load = checkLoad(server.address, host);
  try {
    const result: Record<string, LatencySummary> = {};
    for (const inFlight of [1, 16, 64]) {
      const count = inFlight === 1 ? CHECKS / 8 : CHECKS / 2;
      result[`in_flight_${inFlight}`] = summarise(await runConcurrently(count, inFlight, (i) => load.check(i)));
    }
    return result;
  } finally {
    load.close();
  }
}

/**
 * Latency at `perSecond` to `servers` in turn, ROUNDS times: each server's median round by
 * p99. One stall of the VM puts a round's p99 at 170 ms where the others read 20-30.
 */
async function medianPacedLatency(servers: Record<string, ServerProcess>, host: string, perSecond: number): Promise<Record<string, PacedLatency>> {
  const byServer = await medianRoundsInTurn(servers, ROUNDS, (server) => pacedLatency(server, host, perSecond), (run) => run.p99_ms);
  return Object.fromEntries(Object.entries(byServer).map(([name, { median, rounds }]) => [name, { ...median, rounds_p99_ms: rounds }]));
}

type PacedLatency = LatencySummary & { per_second: number; rounds_p99_ms?: number[] };

/** Latency at `perSecond` Checks sent open-loop for 5 s (bench/check-load.ts `paced`). */
async function pacedLatency(server: ServerProcess, host: string, perSecond: number): Promise<PacedLatency> {
  const load = checkLoad(server.address, host);
  try {
    await runConcurrently(2_000, 16, (i) => load.check(i));
    return { per_second: perSecond, ...summarise(await paced(perSecond, 5, (i) => load.check(i))) };
  } finally {
    load.close();
  }
}

const ROUNDS = Number(process.env.BENCH_CPU_ROUNDS ?? 3);

/** Each server's median round of CPU per Check, the servers loaded in turn (an idle one costs nothing). */
async function medianCpuRuns(servers: Record<string, ServerProcess>, host: string): Promise<Record<string, CpuRun>> {
  const byServer = await medianRoundsInTurn(servers, ROUNDS, (server) => cpuRun(server, host), (run) => run.cpu_us_per_check);
  return Object.fromEntries(Object.entries(byServer).map(([name, { median, rounds }]) => [name, { ...median, rounds_cpu_us_per_check: rounds }]));
}

export async function measureAuthzCpu(redisUrl: string, agentDomain: string, host: string) {
  const servers = {
    noop: await startNoop(),
    leanNoop: await startNoop(true),
    authz: await startAuthzProcess(redisUrl, agentDomain, 1),
    authzOnGrpcJs: await startAuthzProcess(redisUrl, agentDomain, 1, 'grpc-js'),
  };
  let runs: Record<string, CpuRun>;
  let latency: Awaited<ReturnType<typeof latencies>>;
  let halfMax: Record<string, PacedLatency>;
  let fromH2load: Awaited<ReturnType<typeof measureWithH2load>>;
  try {
    fromH2load = await measureWithH2load(servers, host, redisUrl, () => startAuthzProcess(redisUrl, agentDomain, 2));
    runs = await medianCpuRuns(servers, host);
    console.log(`  no-op server: ${runs.noop!.cpu_us_per_check} µs CPU per Check, ${runs.noop!.per_second}/s`);
    console.log(`  no-op on authz's own gRPC server: ${runs.leanNoop!.cpu_us_per_check} µs CPU per Check, ${runs.leanNoop!.per_second}/s`);
    console.log(`  authz (1 worker): ${runs.authz!.cpu_us_per_check} µs CPU per Check, ${runs.authz!.checks_per_cpu_second} per CPU-second, ${runs.authz!.per_second}/s`);
    console.log(`  authz on grpc-js's server (1 worker): ${runs.authzOnGrpcJs!.cpu_us_per_check} µs CPU per Check, ${runs.authzOnGrpcJs!.checks_per_cpu_second} per CPU-second, ${runs.authzOnGrpcJs!.per_second}/s`);
    latency = await latencies(servers.authz, host);
    // At half authz's maximum; the no-op given the same paced load shows the machine's own tail.
    halfMax = await medianPacedLatency({ authz: servers.authz, noop: servers.noop }, host, Math.round(runs.authz!.per_second / 2));
    console.log(`  p99 at ${halfMax.authz!.per_second}/s: authz ${halfMax.authz!.p99_ms} ms, no-op ${halfMax.noop!.p99_ms} ms`);
  } finally {
    await Promise.all(Object.values(servers).map((server) => server.stop()));
  }
  const two = await startAuthzProcess(redisUrl, agentDomain, 2);
  const twoWorkers = await cpuRun(two, host).finally(() => two.stop());
  console.log(`  authz (2 workers): ${twoWorkers.per_second}/s, ${twoWorkers.cpu_us_per_check} µs CPU per Check`);
  const authz = runs.authz!;
  return {
    method: `each server its own process, CPU from /proc/<pid>/stat (workers included), load from the bench process over 8 connections at 64 in flight, Envoy-shaped CheckRequests (12 headers, source and destination); the median of ${ROUNDS} rounds, the servers loaded in turn`,
    noop: runs.noop!,
    /** authz/grpc-server.ts answering OK with proto-loader's decode: authz's cost before its decision and Redis. */
    noop_on_authz_grpc_server: runs.leanNoop!,
    authz,
    authz_to_noop_cpu_ratio: round(authz.cpu_us_per_check / runs.noop!.cpu_us_per_check),
    authz_checks_per_cpu_second: authz.checks_per_cpu_second,
    /** AUTHZ_SERVER=grpc-js: the same authz on @grpc/grpc-js's Server, the fallback. */
    authz_on_grpc_js: runs.authzOnGrpcJs!,
    authz_on_grpc_js_to_own_cpu_ratio: round(runs.authzOnGrpcJs!.cpu_us_per_check / authz.cpu_us_per_check),
    latency: { ...latency, half_max: halfMax.authz! },
    noop_half_max_latency: halfMax.noop!,
    workers: { 1: authz, 2: twoWorkers },
    h2load_caller: fromH2load,
  };
}

/**
 * Checks from h2load at 64 in flight after a warm-up, and the server's CPU over them.
 * `allowedSoFar` reads a running count of allowed Checks (authz's usage counter); without
 * it every answered Check counts, as a no-op allows all.
 */
async function h2loadCpuRun(server: ServerProcess, request: Buffer, allowedSoFar?: () => Promise<number>) {
  const load = { address: server.address, request, connections: 8, streamsPerConnection: 8 };
  await h2loadChecks({ ...load, count: 4_000 });
  const allowedBefore = allowedSoFar ? await allowedSoFar() : 0;
  const cpuBefore = server.cpuSeconds();
  const run = await h2loadChecks({ ...load, count: 2 * CHECKS });
  const cpu = server.cpuSeconds() - cpuBefore;
  const allowed = allowedSoFar ? (await allowedSoFar()) - allowedBefore : run.ok;
  return {
    checks: run.requests,
    allowed,
    per_second: run.per_second,
    cpu_seconds: round(cpu),
    cpu_us_per_check: round((cpu / run.requests) * 1e6),
    checks_per_cpu_second: Math.round(run.requests / cpu),
    latency_64_in_flight: run.latency,
  };
}

/**
 * The CPU figures and the half-maximum latency again, h2load the caller: the servers in
 * turn, ROUNDS rounds each, the median round. h2load reads only HTTP statuses, so authz's
 * allowed Checks are counted by its own usage counter in Redis (one increment per allowed
 * Check).
 */
async function measureWithH2load(
  servers: Record<'noop' | 'leanNoop' | 'authz' | 'authzOnGrpcJs', ServerProcess>,
  host: string,
  redisUrl: string,
  startTwoWorkers: () => Promise<ServerProcess>,
) {
  const request = loadAuthorizationService().service.Check!.requestSerialize(envoyShapedCheckRequest(host, 7)) as Buffer;
  const redis = new Redis(redisUrl);
  try {
    const usageKey = edgeKeyNames.usage(host.split('.')[0]!, usageMonthOf(new Date()));
    const allowedByAuthz = async () => Number((await redis.get(usageKey)) ?? 0);
    const cpu = await medianRoundsInTurn(
      servers,
      ROUNDS,
      // Loaded in turn, so the one usage counter tells each authz's allowed Checks apart.
      (server) => h2loadCpuRun(server, request, server === servers.authz || server === servers.authzOnGrpcJs ? allowedByAuthz : undefined),
      (run) => run.cpu_us_per_check,
    );
    const perSecond = Math.round(cpu.authz!.median.per_second / 2);
    // The machine's own tail at that rate from the no-op on authz's gRPC server: the grpc-js
    // no-op cannot keep up with it (its maximum is below), and an overloaded server next to
    // authz would spend the cores authz's rounds need.
    const paced = await medianRoundsInTurn({ authz: servers.authz, noop: servers.leanNoop }, ROUNDS, async (server) => {
      const run = await h2loadChecks({ address: server.address, request, connections: 8, streamsPerConnection: 32, perSecond, seconds: 5 });
      return { per_second: perSecond, achieved_per_second: run.per_second, answered: run.ok, ...run.latency };
    }, (run) => run.p99_ms);
    const two = await startTwoWorkers();
    const twoWorkers = await h2loadCpuRun(two, request, allowedByAuthz).finally(() => two.stop());
    const withRounds = <R>(entry: { median: R; rounds: number[] }, name: string) => ({ ...entry.median, [name]: entry.rounds });
    const result = {
      method: 'h2load (nghttp2-client) from its own process, one Envoy-shaped CheckRequest (12 headers, source and destination); for CPU 8 connections at 64 in flight; for latency an open loop at half authz\'s maximum (beside it the no-op on authz\'s gRPC server), each connection at most 100 Checks a second and the connections opened 1 ms apart (bench/h2load.ts); CPU from /proc/<pid>/stat; the median of the rounds, the servers loaded in turn',
      noop: withRounds(cpu.noop!, 'rounds_cpu_us_per_check'),
      noop_on_authz_grpc_server: withRounds(cpu.leanNoop!, 'rounds_cpu_us_per_check'),
      authz: withRounds(cpu.authz!, 'rounds_cpu_us_per_check'),
      authz_to_noop_cpu_ratio: round(cpu.authz!.median.cpu_us_per_check / cpu.noop!.median.cpu_us_per_check),
      authz_checks_per_cpu_second: cpu.authz!.median.checks_per_cpu_second,
      authz_on_grpc_js: withRounds(cpu.authzOnGrpcJs!, 'rounds_cpu_us_per_check'),
      authz_on_grpc_js_to_own_cpu_ratio: round(cpu.authzOnGrpcJs!.median.cpu_us_per_check / cpu.authz!.median.cpu_us_per_check),
      half_max: { authz: withRounds(paced.authz!, 'rounds_p99_ms'), noop_on_authz_grpc_server: withRounds(paced.noop!, 'rounds_p99_ms') },
      workers: { 1: cpu.authz!.median, 2: twoWorkers },
    };
    console.log(`  from h2load: no-op ${result.noop.cpu_us_per_check} µs, authz's server ${result.noop_on_authz_grpc_server.cpu_us_per_check} µs, authz ${result.authz.cpu_us_per_check} µs per Check (${result.authz_checks_per_cpu_second} per CPU-second, ${result.authz.allowed} of ${result.authz.checks} allowed)`);
    console.log(`  from h2load, authz on grpc-js's server: ${result.authz_on_grpc_js.cpu_us_per_check} µs per Check (${result.authz_on_grpc_js.checks_per_cpu_second} per CPU-second, ${result.authz_on_grpc_js.per_second}/s, ${result.authz_on_grpc_js.allowed} of ${result.authz_on_grpc_js.checks} allowed)`);
    console.log(`  from h2load, p99 at ${perSecond}/s: authz ${result.half_max.authz.p99_ms} ms, no-op on authz's server ${result.half_max.noop_on_authz_grpc_server.p99_ms} ms`);
    console.log(`  from h2load, authz with 2 workers: ${twoWorkers.per_second}/s (1 worker: ${cpu.authz!.median.per_second}/s), ${twoWorkers.cpu_us_per_check} µs CPU per Check`);
    return result;
  } finally {
    redis.disconnect();
  }
}

const round = (n: number) => Math.round(n * 1000) / 1000;
