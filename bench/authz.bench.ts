import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { credentials } from '@grpc/grpc-js';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { systemClock } from '../contract/clock.js';
import { loadAuthorizationService } from '../proto/load.js';
import { loadAuthzConfig } from '../authz/config.js';
import { startAuthz } from '../authz/server.js';
import { CHECK_SCRIPT, CHECK_SCRIPT_KEY_COUNT, CHECK_SCRIPT_SHA, checkScriptKeysThenArgs } from '../authz/check-script.js';
import { COUNTER_TTL_SECONDS, edgeKeyNames, usageMonthOf, windowOf } from '../contract/edge-keys.js';
import { startEdgeFixture } from './edge-fixture.js';
import { measureAuthzCpu } from './authz-cpu.js';
import { measureEdgeOverhead } from './edge-overhead.js';
import { measureThroughput, writeResult, type Throughput } from './stats.js';

/**
 * The edge's hot path on a Redis of its own: Check through gRPC at 1, 16 and 64 calls in
 * flight; the same Lua script straight from redis-benchmark (the ceiling authz can
 * approach, since a Check is one EVALSHA); authz's CPU per Check (bench/authz-cpu.ts); and
 * what the local edge adds over calling a replica directly (bench/edge-overhead.ts, every
 * part its own process), and again with the edge deciding in its own process
 * (bench/inprocess-edge.ts): what the gRPC hop costs. The Check figures have authz in this process.
 */
const CHECKS = Number(process.env.BENCH_CHECKS ?? 10_000);
const REDIS_BENCHMARK_REQUESTS = 200_000;
const SLUG = 'bench';
const DOMAIN = 'agents.localhost';

async function main(): Promise<void> {
  const fixture = await startEdgeFixture('authz-bench', SLUG);
  const { redis } = fixture;

  // On a Unix socket, as Envoy reaches its sidecar.
  const socketDir = mkdtempSync(join(tmpdir(), 'authz-bench-'));
  const config = loadAuthzConfig({ REDIS_URL: fixture.redisUrl, AGENT_DOMAIN: DOMAIN, AUTHZ_GRPC_SOCKET: join(socketDir, 'authz.sock'), AUTHZ_METRICS_PORT: '0' });
  const authz = await startAuthz(config, { redis, clock: systemClock, logger: pino({ level: 'silent' }) });

  try {
    const { Client } = loadAuthorizationService();
    const client = new Client(authz.grpcAddress, credentials.createInsecure()) as unknown as {
      Check(request: unknown, options: object, callback: (error: Error | null, response?: { status: { code: number } }) => void): void;
      close(): void;
    };
    const checkRequest = (i: number) => ({
      attributes: {
        source: { address: { socket_address: { address: `198.51.100.${i % 200}`, port_value: 40000 } } },
        request: { http: { id: String(i), method: 'GET', host: `${SLUG}.${DOMAIN}:7080`, path: '/', scheme: 'http', protocol: 'HTTP/1.1', headers: {} } },
      },
    });
    const check = (i: number) =>
      new Promise<boolean>((resolve, reject) =>
        client.Check(checkRequest(i), { deadline: new Date(Date.now() + 5_000) }, (error, response) =>
          error ? reject(error) : resolve(response?.status.code === 0),
        ),
      );

    console.log(`Check through gRPC, ${CHECKS} calls at 1, 16 and 64 in flight`);
    const checks: Throughput[] = [];
    for (const inFlight of [1, 16, 64]) {
      const result = await measureThroughput(inFlight === 1 ? CHECKS / 4 : CHECKS, inFlight, check);
      console.log(`  ${inFlight} in flight: ${result.per_second}/s, p50 ${result.p50_ms} ms, p99 ${result.p99_ms} ms, ${result.failed} denied`);
      checks.push(result);
    }
    client.close();

    console.log('CPU per allowed Check, authz and a no-op server each in a process of its own');
    const cpu = await measureAuthzCpu(fixture.redisUrl, DOMAIN, `${SLUG}.${DOMAIN}:7080`);

    const ceiling = await redisBenchmarkCeiling(redis, fixture.redisUrl);
    console.log(`redis-benchmark EVALSHA of the same script (64 clients): ${ceiling}/s`);

    console.log("The local edge against calling the replica directly, each part a process of its own, the edge reaching authz on its Unix socket");
    const overhead = await measureEdgeOverhead({ redis, redisUrl: fixture.redisUrl, agentDomain: DOMAIN });
    console.log('The same, the edge reaching authz over TCP (AUTHZ_GRPC_LISTEN)');
    const overTcp = await measureEdgeOverhead({ redis, redisUrl: fixture.redisUrl, agentDomain: DOMAIN, authzTransport: 'tcp' });
    console.log('The same, the edge deciding in its own process (bench/inprocess-edge.ts): what the gRPC hop to authz costs');
    const inProcess = await measureEdgeOverhead({ redis, redisUrl: fixture.redisUrl, agentDomain: DOMAIN, edgeEntry: 'bench/inprocess-edge.ts' });

    // Denied Checks (authz's deadline missed) are not throughput.
    const best = Math.max(...checks.map((result) => Math.round(result.per_second * (1 - result.failed / result.count))));
    const fraction = round(best / ceiling);
    const path = writeResult('edge', {
      measured_at: new Date().toISOString(),
      machine: { cpus: cpus().length, cpu_model: cpus()[0]?.model ?? 'unknown', node: process.version },
      check: checks,
      redis_ceiling: { tool: 'redis-benchmark', command: `EVALSHA <check script> ${CHECK_SCRIPT_KEY_COUNT} keys`, clients: 64, requests: REDIS_BENCHMARK_REQUESTS, per_second: ceiling },
      check_fraction_of_redis_ceiling: fraction,
      cpu_per_check: cpu,
      edge_overhead: overhead,
      edge_overhead_authz_over_tcp: overTcp,
      /** Not how the platform runs (DESIGN.md: the local edge asks authz over gRPC, as Envoy does): the gRPC hop's cost. */
      edge_overhead_deciding_in_process: inProcess,
    });
    console.log(`Check throughput: ${best}/s = ${Math.round(fraction * 100)}% of the Redis ceiling (${ceiling}/s). Written to ${path}`);
  } finally {
    await authz.close();
    await fixture.stop();
    rmSync(socketDir, { recursive: true, force: true });
  }
}

/** requests per second redis-benchmark gets for one EVALSHA of the check script, the Check's whole Redis work. */
async function redisBenchmarkCeiling(redis: Redis, url: string): Promise<number> {
  await redis.script('LOAD', CHECK_SCRIPT);
  const { port } = new URL(url);
  const window = windowOf(new Date());
  const keysThenArgs = checkScriptKeysThenArgs(
    {
      agent: edgeKeyNames.agent(SLUG),
      keys: edgeKeyNames.keys(SLUG),
      upstreams: edgeKeyNames.upstreams(SLUG),
      callerCounter: edgeKeyNames.callerCounter(SLUG, '198.51.100.1', window),
      agentCounter: edgeKeyNames.agentCounter(SLUG, window),
      usage: edgeKeyNames.usage(SLUG, usageMonthOf(new Date())),
      wake: edgeKeyNames.wake(SLUG),
      domains: edgeKeyNames.domains(SLUG),
      canaryUpstreams: edgeKeyNames.canaryUpstreams(SLUG),
    },
    // A public agent's Check on its platform hostname, no canary running: what the load above sends.
    { keyHash: '', counterTtlSeconds: COUNTER_TTL_SECONDS, wakeTtlSeconds: 30, customHost: '', previewDeployment: '', randomBucket: 0, callerSeed: 0, addressSeed: 0 },
  );
  const { stdout } = await promisify(execFile)('redis-benchmark', [
    '-h', '127.0.0.1', '-p', port, '-n', String(REDIS_BENCHMARK_REQUESTS), '-c', '64', '--csv',
    'EVALSHA', CHECK_SCRIPT_SHA, String(CHECK_SCRIPT_KEY_COUNT), ...keysThenArgs.map(String),
  ]);
  const line = stdout.trim().split('\n').at(-1) ?? '';
  const perSecond = Number(line.split(',')[1]?.replace(/"/g, ''));
  if (!Number.isFinite(perSecond) || perSecond <= 0) throw new Error(`cannot read redis-benchmark's output: ${stdout}`);
  return Math.round(perSecond);
}

const round = (n: number) => Math.round(n * 1000) / 1000;

await main();
