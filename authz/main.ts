// First: on another Node this stops the program before any other module loads.
import '../contract/require-supported-node.js';
import cluster from 'node:cluster';
import { pino } from 'pino';
import { Redis } from 'ioredis';
import { systemClock } from '../contract/clock.js';
import { formatGrpcTarget } from '../contract/grpc-target.js';
import { loadEnvFile } from '../contract/env-file.js';
import { loadAuthzConfig } from './config.js';
import { settingsOrExit } from '../contract/settings-reader.js';
import { startAuthz } from './server.js';
import { shareMetricsWithPrimary, startAuthzPrimary, workerIndex } from './cluster.js';
import { readXdsTemplate, startEdgeXds } from './xds/edge-xds.js';

// .env or --env-file first; a cluster worker loads it again, finding what the primary loaded already set.
settingsOrExit(() => loadEnvFile(process.env, process.argv.slice(2)));

/**
 * authz as a process: Envoy's ext_authz service (gRPC, plaintext HTTP/2) on the Unix socket
 * AUTHZ_GRPC_SOCKET, as Envoy's sidecar, or on AUTHZ_GRPC_LISTEN's host:port; and, on
 * AUTHZ_HOST:AUTHZ_METRICS_PORT, Prometheus metrics (/metrics: authz's families and the
 * process's) and the probes /livez, /readyz and /healthz (authz/ops-server.ts). With
 * AUTHZ_WORKERS > 1 this process is the cluster primary: its workers serve the gRPC
 * socket, it serves the metrics port (authz/cluster.ts).
 * Each process has one Redis connection (the primary's answers /readyz only).
 */
const config = settingsOrExit(() => loadAuthzConfig(process.env));
// Envoy's HTTPS listener is built from two files: read at start, a bad one stops authz as a bad setting does.
const xdsTemplate = config.xds && cluster.isPrimary ? settingsOrExit(() => readXdsTemplate(config.xds!)) : null;
const logger = pino({ name: 'authz', redact: { paths: ['*.authorization', 'headers.authorization'], censor: '[redacted]' } });

const redis = new Redis(config.redisUrl, {
  // The control API writes the projection under the same REDIS_KEY_PREFIX (docs/contract.md, "Edge projection").
  keyPrefix: config.redisKeyPrefix,
  connectTimeout: 2_000,
  // Each Check has its own deadline (AUTHZ_REDIS_TIMEOUT_MS); this only bounds commands
  // nobody waits for any more.
  commandTimeout: 2_000,
  maxRetriesPerRequest: 1,
  retryStrategy: (attempt) => Math.min(attempt * 100, 1_000),
  // Off: the Checks of one event-loop turn already share one write (authz/write-batching.ts),
  // which costs less CPU per Check than ioredis's auto-pipelining.
  enableAutoPipelining: false,
});
redis.on('error', (error) => logger.debug({ err: error }, 'Redis connection error'));

const stop = await start();
let stopping = false;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  // A terminal's Ctrl-C reaches a cluster's workers and its primary, whose stop sends them
  // SIGTERM too: the first signal stops, later ones wait for it.
  process.on(signal, () => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'authz stopping');
    void stop().finally(() => redis.quit().finally(() => process.exit(0)));
  });
}

async function start(): Promise<() => Promise<void>> {
  // Envoy's HTTPS listener and certificates: once per node, so in the primary (or the one process).
  const xds = config.xds && xdsTemplate ? await startEdgeXds(config.xds, xdsTemplate, { redis, keyPrefix: config.redisKeyPrefix, logger }) : null;
  const stopXds = () => xds?.close() ?? Promise.resolve();
  if (config.workers > 1 && cluster.isPrimary) {
    const primary = await startAuthzPrimary(config, { redis, logger });
    logger.info({ workers: config.workers, grpc: formatGrpcTarget(config.grpcListen), metrics: `${config.host}:${primary.metricsPort}` }, 'authz started its workers');
    return () => Promise.all([primary.stop(), stopXds()]).then(() => undefined);
  }
  const authz = await startAuthz(config, { redis, clock: systemClock, logger }, { serveOps: cluster.isPrimary, worker: workerIndex(process.env) });
  if (cluster.isWorker) shareMetricsWithPrimary(authz.metrics.registry);
  logger.info({ grpc: authz.grpcAddress, metrics: authz.metricsPort ? `${config.host}:${authz.metricsPort}` : 'the primary', agentDomain: config.agentDomain }, 'authz listening');
  return () => Promise.all([authz.close(), stopXds()]).then(() => undefined);
}
