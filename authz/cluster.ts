import cluster, { type Worker } from 'node:cluster';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { AggregatorRegistry, type Registry } from 'prom-client';
import { withDeadline } from '../contract/deadline.js';
import { isUnixSocket } from '../contract/grpc-target.js';
import type { AuthzConfig } from './config.js';
import { createOpsServer } from './ops-server.js';
import { clearStaleSocket } from './unix-socket.js';

/**
 * AUTHZ_WORKERS > 1: this process, the cluster primary, forks the workers and each runs
 * authz (startAuthz) on the same gRPC socket (or port). Its gRPC server
 * (authz/grpc-server.ts) binds with node:net's `listen`, and in a cluster worker Node hands
 * a listen to the primary, which holds the one listening socket and deals connections out
 * to the workers in turn (Node's cluster docs, "How it works"): no SO_REUSEPORT needed.
 * The primary's round-robin handle binds a Unix socket's path as well as a port
 * (lib/internal/cluster/round_robin_handle.js; test/authz-workers.test.ts runs it on a
 * socket), so the primary clears a stale socket before forking and the workers never
 * touch the path (authz/unix-socket.ts). A gRPC connection stays with its worker; Envoy
 * keeps several.
 *
 * The primary serves no Check. It serves the ops port once: /metrics adds the workers'
 * families up (prom-client's AggregatorRegistry asks each worker over IPC), /readyz asks
 * Redis on a connection of its own and needs a worker serving. A worker that exits is replaced; stopping sends each
 * worker SIGTERM (its own graceful close) and waits for all of them.
 */

/** The environment variable the primary hands each worker its index in (not a setting: the primary sets it). */
const WORKER_INDEX_ENV = 'AUTHZ_WORKER_INDEX';

/** In a worker: its index, as the primary handed it down (0 outside a cluster). */
export function workerIndex(env: Readonly<Record<string, string | undefined>>): number {
  const index = Number(env[WORKER_INDEX_ENV] ?? 0);
  return Number.isInteger(index) && index >= 0 ? index : 0;
}

/** A crashing worker is replaced after this pause, so a worker that cannot start does not spin. */
const RESPAWN_DELAY_MS = 500;

export interface AuthzPrimary {
  metricsPort: number;
  /** Stops every worker (each closes gracefully) and the ops port. */
  stop(): Promise<void>;
}

export async function startAuthzPrimary(config: AuthzConfig, deps: { redis: Redis; logger: Logger }): Promise<AuthzPrimary> {
  let stopping = false;
  const respawns = new Set<NodeJS.Timeout>();
  // Each worker has an index, 0 to workers - 1, handed down in its environment; the one that
  // replaces a dead worker takes its index, so the metrics' `worker` label makes no new series.
  const indexOf = new Map<number, number>();
  const fork = (index: number) => {
    const worker = cluster.fork({ [WORKER_INDEX_ENV]: String(index) });
    indexOf.set(worker.id, index);
    worker.on('online', () => deps.logger.debug({ worker: index }, 'authz worker online'));
  };
  // Workers whose gRPC server is bound: the primary is ready only with one of them at least.
  const listening = new Set<number>();
  cluster.on('listening', (worker: Worker) => listening.add(worker.id));
  cluster.on('exit', (worker: Worker, code: number | null, signal: string | null) => {
    listening.delete(worker.id);
    const index = indexOf.get(worker.id) ?? 0;
    indexOf.delete(worker.id);
    if (stopping) return;
    deps.logger.warn({ worker: index, workerPid: worker.process.pid, code, signal }, 'authz worker exited; starting another');
    const timer = setTimeout(() => {
      respawns.delete(timer);
      if (!stopping) fork(index);
    }, RESPAWN_DELAY_MS);
    respawns.add(timer);
  });
  if (isUnixSocket(config.grpcListen)) await clearStaleSocket(config.grpcListen.path);
  for (let index = 0; index < config.workers; index += 1) fork(index);

  const aggregator = new AggregatorRegistry();
  const ops = createOpsServer({
    registry: { metrics: () => aggregator.clusterMetrics(), contentType: aggregator.contentType },
    isReady: async () => listening.size > 0 && (await withDeadline(deps.redis.ping(), config.redisTimeoutMs)) === 'PONG',
  });
  ops.listen(config.metricsPort, config.host);
  await once(ops, 'listening');

  return {
    metricsPort: (ops.address() as AddressInfo).port,
    async stop() {
      stopping = true;
      for (const timer of respawns) clearTimeout(timer);
      const workers = Object.values(cluster.workers ?? {}).filter((worker): worker is Worker => worker !== undefined);
      await Promise.all(
        workers.map((worker) => {
          if (worker.isDead()) return undefined;
          const exited = once(worker, 'exit');
          worker.process.kill('SIGTERM');
          return exited;
        }),
      );
      ops.closeAllConnections();
      await new Promise<void>((resolve) => ops.close(() => resolve()));
    },
  };
}

/** In a worker: answer the primary's requests for this process's metrics (prom-client's cluster protocol). */
export function shareMetricsWithPrimary(registry: Registry): void {
  // Constructing one installs the worker's IPC listener (prom-client lib/cluster.js, addListeners).
  new AggregatorRegistry();
  AggregatorRegistry.setRegistries([registry]);
}
