import { Redis } from 'ioredis';
import { pino } from 'pino';
import { systemClock } from '../contract/clock.js';
import { createRequestFigureRecorder } from '../contract/request-figure-recorder.js';
import { factsOf, fieldsOf } from '../authz/check-request.js';
import { buildCheckResponse } from '../authz/check-response.js';
import { loadAuthzConfig } from '../authz/config.js';
import { createDecider } from '../authz/decider.js';
import { createAuthzMetrics } from '../authz/metrics.js';
import type { AuthzClient } from '../envoy/local-edge/authz-client.js';
import { loadLocalEdgeConfig } from '../envoy/local-edge/config.js';
import { startLocalEdge } from '../envoy/local-edge/server.js';

/**
 * The local edge with no gRPC hop: each request's Check is authz's own decider
 * (authz/decider.ts: admission, the Redis round trip, the wake wait, metrics) called in
 * the edge's process, its answer built as authz builds it and obeyed as the local edge
 * obeys authz's. A bench entry, not a way to run the platform: it measures what the
 * gRPC hop to authz costs (bench/edge-overhead.ts, docs/edge.md), while DESIGN.md keeps
 * the local edge asking authz over gRPC exactly as Envoy does. Started like
 * envoy/local-edge/main.ts, with authz's settings (REDIS_URL, AGENT_DOMAIN, …) too.
 */
const edgeConfig = loadLocalEdgeConfig(process.env);
// authz's decider alone, no gRPC server: where it would listen does not matter, so any socket path will do.
const authzConfig = loadAuthzConfig({ AUTHZ_GRPC_SOCKET: '/nonexistent/authz.sock', ...process.env });
const redis = new Redis(authzConfig.redisUrl, { keyPrefix: authzConfig.redisKeyPrefix, connectTimeout: 2_000, commandTimeout: 2_000, maxRetriesPerRequest: 1, enableAutoPipelining: false });
redis.on('error', () => undefined);
const decider = createDecider(authzConfig, { redis, clock: systemClock, logger: pino({ level: 'warn' }), metrics: createAuthzMetrics() });
const inProcess: AuthzClient = {
  check: async (request) => buildCheckResponse(await decider.decide(factsOf(fieldsOf(request), authzConfig.trustExternalAddress))),
  close: () => decider.close(),
};
const requestFigures = createRequestFigureRecorder({ redis, onError: () => undefined });
const edge = await startLocalEdge({ ...edgeConfig, authzClient: inProcess, requestFigures });
console.log(JSON.stringify({ msg: 'listening', address: `${edge.host}:${edge.port}` }));

process.once('SIGTERM', () => {
  decider.releaseHeld();
  void edge
    .close()
    .then(() => requestFigures.close())
    .finally(() => redis.quit().finally(() => process.exit(0)));
});
