import { Agent, request as httpRequest } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../scripts/lib/local-services.js';
import { startNodeProcess, stopProcess } from './child-process.js';
import { startEdgeFixture } from './edge-fixture.js';
import { runConcurrently, summarise, writeResult } from './stats.js';

/**
 * Issue 13 item 6: N concurrent keep-alive connections through the local edge and authz
 * to one replica, each sending requests back to back. Counts the answers by status: a
 * healthy edge answers 200; under overload it should shed some Checks (503 with
 * Retry-After), not fail nearly all of them. authz and the local edge run as their own
 * processes, as `npm run up` starts them; loopback only; the count is bounded.
 *
 *   BENCH_CONNECTIONS=500 BENCH_OVERLOAD_REQUESTS=20000 node --import tsx bench/edge-overload.bench.ts
 */
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 500);
const REQUESTS = Number(process.env.BENCH_OVERLOAD_REQUESTS ?? 20_000);
const SLUG = 'bench';
const DOMAIN = 'agents.localhost';

async function main(): Promise<void> {
  const fixture = await startEdgeFixture('edge-overload', SLUG);
  const { redis, replicaPort } = fixture;

  // authz on a Unix socket, the local edge connecting there, as Envoy to its sidecar.
  const socketDir = mkdtempSync(join(tmpdir(), 'authz-bench-'));
  const authzSocket = join(socketDir, 'authz.sock');
  const edgePort = await freePort();
  const { child: authz } = await startNodeProcess('authz/main.ts', {
    REDIS_URL: fixture.redisUrl, AGENT_DOMAIN: DOMAIN, AUTHZ_GRPC_SOCKET: authzSocket, AUTHZ_METRICS_PORT: String(await freePort()),
  }, 'authz listening');
  // All the bench's connections come from 127.0.0.1: lift the per-address cap above them.
  const { child: edge } = await startNodeProcess('envoy/local-edge/main.ts', {
    EDGE_PORT: String(edgePort), AUTHZ_ADDRESS: `unix:${authzSocket}`, EDGE_UPSTREAM_SUBNETS: '127.0.0.0/8', EDGE_MAX_CONNECTIONS_PER_ADDRESS: String(CONNECTIONS + 10), REDIS_URL: fixture.redisUrl,
  }, 'listening');
  const keepAlive = new Agent({ keepAlive: true, maxSockets: CONNECTIONS });

  try {
    const byStatus: Record<string, number> = {};
    const get = () =>
      new Promise<void>((resolve) => {
        httpRequest({ host: '127.0.0.1', port: edgePort, path: '/', headers: { host: `${SLUG}.${DOMAIN}:7080` }, agent: keepAlive }, (response) => {
          response.resume();
          response.on('end', () => {
            const key = String(response.statusCode);
            byStatus[key] = (byStatus[key] ?? 0) + 1;
            resolve();
          });
        }).on('error', () => {
          byStatus.connection_error = (byStatus.connection_error ?? 0) + 1;
          resolve();
        }).end();
      });
    await runConcurrently(CONNECTIONS, CONNECTIONS, get); // opens the connections
    for (const key of Object.keys(byStatus)) delete byStatus[key];
    const started = process.hrtime.bigint();
    const samples = await runConcurrently(REQUESTS, CONNECTIONS, get);
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    const ok = byStatus['200'] ?? 0;
    const result = {
      measured_at: new Date().toISOString(),
      machine: { cpus: cpus().length, cpu_model: cpus()[0]?.model ?? 'unknown', node: process.version },
      connections: CONNECTIONS,
      requests: REQUESTS,
      by_status: byStatus,
      ok_fraction: Math.round((ok / REQUESTS) * 1000) / 1000,
      ok_per_second: Math.round(ok / seconds),
      latency: summarise(samples),
    };
    const path = writeResult(`edge-overload-${CONNECTIONS}`, result);
    console.log(`${CONNECTIONS} connections, ${REQUESTS} requests: ${JSON.stringify(byStatus)}, ${Math.round(result.ok_fraction * 100)}% answered 200, ${result.ok_per_second}/s. Written to ${path}`);
  } finally {
    keepAlive.destroy();
    for (const child of [edge, authz]) await stopProcess(child);
    await fixture.stop();
    rmSync(socketDir, { recursive: true, force: true });
  }
}

await main();
