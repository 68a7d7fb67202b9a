import type { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { Agent, request as httpRequest } from 'node:http';
import type { Redis } from 'ioredis';
import { freePort } from '../scripts/lib/local-services.js';
import { startAuthzProcess, type AuthzTransport, type ServerProcess } from './authz-cpu.js';
import { startNodeProcess, stopProcess } from './child-process.js';
import { registerAgent } from './edge-fixture.js';
import { h2loadGets } from './h2load.js';
import { treeCpuSeconds } from './process-cpu.js';
import { measureThroughput, medianBy, type Throughput } from './stats.js';

/**
 * Issue 21's local-edge figures, with every part in a process of its own as `npm run up`
 * runs them: the replica (bench/replica-server.ts), authz (`authz/main.ts`, one worker)
 * and the local edge (`envoy/local-edge/main.ts`); the load generator is this process.
 * Direct is the generator calling the replica; through the edge is the same request to
 * the edge with the agent's Host. Each process's CPU per request (from /proc) says where
 * the time goes. The comparison is made twice: from Node's http client in this process,
 * and from h2load (bench/h2load.ts), a C caller that leaves the other processes the CPU.
 */
const REQUESTS = Number(process.env.BENCH_EDGE_REQUESTS ?? 5_000);
const WARM_UP = Math.min(500, REQUESTS);
const SLUG = 'bench-edge';

export interface EdgeOverheadOptions {
  redis: Redis;
  redisUrl: string;
  agentDomain: string;
  /** Node options for the edge process only, e.g. `--cpu-prof --cpu-prof-dir=…` (profiles are written as it stops). */
  edgeNodeArgs?: readonly string[];
  /** Default 1 and 16, the two figures. */
  inFlight?: readonly number[];
  /**
   * The edge's entry: envoy/local-edge/main.ts (default), or bench/inprocess-edge.ts, the
   * same edge deciding in its own process, to measure what the gRPC hop to authz costs.
   */
  edgeEntry?: string;
  /** How the edge reaches authz: its Unix socket (default, as `npm run up` and Envoy's sidecar) or TCP. */
  authzTransport?: AuthzTransport;
}

type CpuPerRequest = Record<'replica' | 'authz' | 'local_edge' | 'load_generator', number>;

interface Run extends Throughput {
  cpu_us_per_request: CpuPerRequest;
  /** The edge process's read and write system calls per request (/proc/<pid>/io syscr, syscw): each is a trip into the kernel. */
  edge_syscalls_per_request: { read: number; write: number };
}

interface Compared {
  direct: Run;
  through_edge: Run;
  throughput_ratio: number;
  added_p50_ms: number;
  added_p99_ms: number;
  rounds_throughput_ratio?: number[];
  rounds_added_p50_ms?: number[];
}

const ROUNDS = Number(process.env.BENCH_EDGE_ROUNDS ?? 3);

function comparison(direct: Run, throughEdge: Run): Compared {
  return {
    direct,
    through_edge: throughEdge,
    throughput_ratio: round(throughEdge.per_second / direct.per_second),
    added_p50_ms: round(throughEdge.p50_ms - direct.p50_ms),
    added_p99_ms: round(throughEdge.p99_ms - direct.p99_ms),
  };
}

export async function measureEdgeOverhead(options: EdgeOverheadOptions) {
  const edgeEntry = options.edgeEntry ?? 'envoy/local-edge/main.ts';
  const replica = await startNodeProcess('bench/replica-server.ts', {}, '\n');
  const replicaPort = (JSON.parse(replica.output) as { port: number }).port;
  await registerAgent(options.redis, SLUG, `127.0.0.1:${replicaPort}`);
  const authzTransport = options.authzTransport ?? 'socket';
  const authz = await startAuthzProcess(options.redisUrl, options.agentDomain, 1, 'own', authzTransport);
  const edgePort = await freePort();
  let edge: ChildProcess | undefined;
  const keepAlive = new Agent({ keepAlive: true, maxSockets: 64 });
  try {
    edge = (await startNodeProcess(edgeEntry, {
      EDGE_PORT: String(edgePort), AUTHZ_ADDRESS: authz.address, EDGE_UPSTREAM_SUBNETS: '127.0.0.0/8', REDIS_URL: options.redisUrl, AGENT_DOMAIN: options.agentDomain,
    }, 'listening', options.edgeNodeArgs)).child;
    const processes = { replica: replica.child.pid!, local_edge: edge.pid! };
    const get = (port: number, host: string) => () =>
      new Promise<boolean>((resolve, reject) => {
        httpRequest({ host: '127.0.0.1', port, path: '/', headers: { host }, agent: keepAlive }, (response) => {
          response.resume();
          response.on('end', () => resolve(response.statusCode === 200));
        }).on('error', reject).end();
      });
    // Each generator sends a warm-up of WARM_UP requests and then REQUESTS, both inside the CPU window.
    const fromNode = (inFlight: number, port: number, host: string) => measureThroughput(REQUESTS, inFlight, get(port, host));
    // h2load's CPU is its process's, not this one's: it is reported in place of this process's.
    const fromH2load = async (inFlight: number, port: number, host: string): Promise<Throughput & { generatorCpuSeconds: number }> => {
      const load = { address: `127.0.0.1:${port}`, host, connections: inFlight, streamsPerConnection: 1 };
      const warmUp = await h2loadGets({ ...load, count: WARM_UP });
      const result = await h2loadGets({ ...load, count: REQUESTS });
      const throughput = { in_flight: inFlight, per_second: result.per_second, failed: result.requests - result.ok, ...result.latency };
      return { ...throughput, generatorCpuSeconds: warmUp.cpu_seconds + result.cpu_seconds };
    };
    type Generator = (inFlight: number, port: number, host: string) => Promise<Throughput & { generatorCpuSeconds?: number }>;
    const run = async (generator: Generator, inFlight: number, port: number, host: string): Promise<Run> => {
      const syscallsBefore = syscallsOf(edge!.pid!);
      const cpuBefore = cpuNow(processes, authz);
      const { generatorCpuSeconds, ...result } = await generator(inFlight, port, host);
      const cpuAfter = cpuNow(processes, authz);
      const syscallsAfter = syscallsOf(edge!.pid!);
      const requests = REQUESTS + WARM_UP;
      const perRequest = Object.fromEntries(
        Object.entries(cpuAfter).map(([name, seconds]) => [name, round(((seconds - cpuBefore[name as keyof CpuPerRequest]) / requests) * 1e6)]),
      ) as CpuPerRequest;
      if (generatorCpuSeconds !== undefined) perRequest.load_generator = round((generatorCpuSeconds / requests) * 1e6);
      const edgeSyscalls = {
        read: round((syscallsAfter.read - syscallsBefore.read) / requests),
        write: round((syscallsAfter.write - syscallsBefore.write) / requests),
      };
      return { ...result, cpu_us_per_request: perRequest, edge_syscalls_per_request: edgeSyscalls };
    };

    const compare = async (generator: Generator, label: string): Promise<Record<string, Compared>> => {
      const compared: Record<string, Compared> = {};
      for (const inFlight of options.inFlight ?? [1, 16]) {
        // Direct and through the edge in turn, ROUNDS times; the round with the median ratio
        // is reported whole, so its figures stay from one moment of this shared machine.
        const rounds: Compared[] = [];
        for (let attempt = 0; attempt < ROUNDS; attempt += 1) {
          const direct = await run(generator, inFlight, replicaPort, 'replica');
          const throughEdge = await run(generator, inFlight, edgePort, `${SLUG}.${options.agentDomain}:7080`);
          rounds.push(comparison(direct, throughEdge));
        }
        const median = medianBy(rounds, (each) => each.throughput_ratio);
        const figures = { ...median, rounds_throughput_ratio: rounds.map((each) => each.throughput_ratio), rounds_added_p50_ms: rounds.map((each) => each.added_p50_ms) };
        compared[`in_flight_${inFlight}`] = figures;
        const { direct, through_edge: throughEdge } = median;
        console.log(
          `  ${label}, ${inFlight} in flight: p50 +${figures.added_p50_ms} ms (${direct.p50_ms} → ${throughEdge.p50_ms}), ` +
            `${direct.per_second}/s → ${throughEdge.per_second}/s (${figures.throughput_ratio}×); ` +
            `CPU µs per request through the edge: ${JSON.stringify(throughEdge.cpu_us_per_request)}, the edge's system calls: ${JSON.stringify(throughEdge.edge_syscalls_per_request)}`,
        );
      }
      return compared;
    };
    const fromNodeFigures = await compare(fromNode, 'from Node');
    const fromH2loadFigures = await compare(fromH2load, 'from h2load');
    return {
      method: `replica, authz (authz/main.ts, 1 worker, reached over ${authzTransport === 'socket' ? 'its Unix socket' : 'TCP'}) and the local edge (${edgeEntry}) each a process of its own; the load generator in the bench process over keep-alive connections; CPU from /proc/<pid>/stat (the generator from process.cpuUsage), warm-up included; of ${ROUNDS} rounds, the one with the median throughput ratio`,
      ...fromNodeFigures,
      h2load_caller: {
        method: 'the same, the load from h2load --h1 (nghttp2-client) in a process of its own, one request at a time per keep-alive connection; load_generator is h2load\'s CPU (bash\'s times)',
        ...fromH2loadFigures,
      },
    };
  } finally {
    keepAlive.destroy();
    if (edge) await stopProcess(edge);
    await authz.stop();
    await stopProcess(replica.child);
  }
}

/** proc(5), /proc/<pid>/io: syscr and syscw, the read and write system calls made so far. */
function syscallsOf(pid: number): { read: number; write: number } {
  const text = readFileSync(`/proc/${pid}/io`, 'utf8');
  return { read: Number(/^syscr: (\d+)$/m.exec(text)?.[1]), write: Number(/^syscw: (\d+)$/m.exec(text)?.[1]) };
}

function cpuNow(pids: { replica: number; local_edge: number }, authz: ServerProcess): CpuPerRequest {
  const own = process.cpuUsage();
  return {
    replica: treeCpuSeconds(pids.replica),
    authz: authz.cpuSeconds(),
    local_edge: treeCpuSeconds(pids.local_edge),
    load_generator: (own.user + own.system) / 1e6,
  };
}

const round = (n: number) => Math.round(n * 1000) / 1000;
