import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { ACCESS_LOG_SERVICE, AUTHORIZATION_SERVICE, loadAccessLogService, loadAuthorizationService } from '../proto/load.js';
import { createRequestFigureRecorder } from '../contract/request-figure-recorder.js';
import { createEdgeSpanRecorder, edgeTraceOf } from '../contract/edge-trace.js';
import { createAccessLogService } from './access-log-service.js';
import type { Clock } from '../contract/clock.js';
import type { AuthzConfig, AuthzServerKind } from './config.js';
import type { RequestFacts } from './check-request.js';
import { checkRequestDeserializer } from './check-request-decoder.js';
import { encodeOkCheckResponse, isOkCheckResponse } from './ok-response-encoder.js';
import { buildCheckResponse, type CheckResponseMessage } from './check-response.js';
import { createDecider } from './decider.js';
import { REDIS_ERROR_LOG_INTERVAL_MS, throttled } from './throttled.js';
import { withDeadline } from '../contract/deadline.js';
import { formatGrpcTarget, type GrpcTarget } from '../contract/grpc-target.js';
import { createGrpcServer, type GrpcCallback, type GrpcMethodDefinition, type GrpcServer, type UnaryCall } from './grpc-server.js';
import { createGrpcJsServer } from './grpc-js-server.js';
import { healthService, healthServiceDefinition } from './health.js';
import { createAuthzMetrics, type AuthzMetrics } from './metrics.js';
import { createOpsServer } from './ops-server.js';

export interface AuthzDeps {
  redis: Redis;
  clock: Clock;
  logger: Logger;
}

export interface RunningAuthz {
  /** Where the gRPC server (Authorization, access logs, Health) listens: its socket, or its bound host and port. */
  grpcTarget: GrpcTarget;
  /** The same as a gRPC name, `unix:/path` or `host:port`: what grpc-js clients and the local edge's AUTHZ_ADDRESS take. */
  grpcAddress: string;
  /** 0 in a cluster worker, which serves no ops port: the primary serves it for all (authz/cluster.ts). */
  metricsPort: number;
  metrics: AuthzMetrics;
  /** Checks held now for a parked agent's wake. */
  readonly heldForWake: number;
  /** Stops both servers and flushes the request figures; the Redis client belongs to the caller. */
  close(): Promise<void>;
}

/**
 * How long a stop waits for open calls before dropping their connections: inside
 * the kill_timeout (10 s) of nomad-jobs/envoy.nomad.hcl's authz task, so authz still flushes its request
 * figures before Nomad kills it. Envoy closes its streams once answered; a peer that does
 * not would otherwise hold the stop until the kill.
 */
const SHUTDOWN_GRACE_MS = 8_000;

/** AUTHZ_SERVER's choice: the same services and handlers on either (authz/config.ts). */
export const GRPC_SERVERS: Readonly<Record<AuthzServerKind, () => GrpcServer>> = Object.freeze({ own: createGrpcServer, 'grpc-js': createGrpcJsServer });

export interface AuthzOptions {
  /** Serve /metrics and the probes on config.metricsPort (default); a cluster worker does not. */
  serveOps?: boolean;
  /** This process's index among a cluster's workers, the metrics' `worker` label (authz/cluster.ts); 0 by default. */
  worker?: number;
}

/** The composition root of authz: builds the decider (authz/decider.ts) from its deps and serves it over gRPC. Port 0 picks free ports. */
export async function startAuthz(config: AuthzConfig, deps: AuthzDeps, { serveOps = true, worker = 0 }: AuthzOptions = {}): Promise<RunningAuthz> {
  const metrics = createAuthzMetrics({ worker });
  const decider = createDecider(config, { ...deps, metrics });
  // Custom hostnames known before the first Check, so a start does not answer 404 for them;
  // with Redis away this settles after its deadline, and Checks fail closed meanwhile.
  await decider.ready;
  const grpcServer = GRPC_SERVERS[config.grpcServer]();
  grpcServer.addService(authorizationService(config.trustExternalAddress), {
    Check(call: UnaryCall<RequestFacts>, callback: GrpcCallback<CheckResponseMessage>) {
      void decider.decide(call.request).then((decision) =>
        callback(null, buildCheckResponse(decision, decision.outcome === 'allowed' ? edgeTraceOf(call.request.traceparent, call.request.requestId) : undefined)),
      );
    },
  });
  // Ready while Redis answers within a Check's deadline: asked by gRPC (Envoy's health
  // checks) and by HTTP (/readyz on the metrics port) alike.
  const isReady = async () => (await withDeadline(deps.redis.ping(), config.redisTimeoutMs)) === 'PONG';
  // Envoy's access logs on the same socket, apart from Check: its handler never runs on a
  // Check's path. Each agent's second of figures goes to Redis once (contract/request-figures.ts).
  const figures = createRequestFigureRecorder({
    redis: deps.redis,
    onError: throttled(REDIS_ERROR_LOG_INTERVAL_MS, (error: Error) =>
      deps.logger.warn({ err: error }, "Redis refused a second of agents' request figures; they are dropped"),
    ),
  });
  // Invokes' edge spans, queued for the control API's traces the same way (contract/edge-trace.ts).
  const edgeSpans = createEdgeSpanRecorder({
    redis: deps.redis,
    onError: throttled(REDIS_ERROR_LOG_INTERVAL_MS, (error: Error) => deps.logger.warn({ err: error }, 'Redis refused a second of edge spans; they are dropped')),
    onDropped: throttled(REDIS_ERROR_LOG_INTERVAL_MS, (_: void) => deps.logger.warn('edge spans are dropped: more came in a second than the buffer holds')),
  });
  const accessLog = createAccessLogService(figures, edgeSpans);
  grpcServer.addService(loadAccessLogService().service, accessLog.implementation);
  grpcServer.addService(healthServiceDefinition, healthService([AUTHORIZATION_SERVICE, ACCESS_LOG_SERVICE], isReady));
  const grpcTarget = await grpcServer.listen(config.grpcListen);

  const metricsServer = serveOps ? createOpsServer({ registry: metrics.registry, isReady }) : null;
  metricsServer?.listen(config.metricsPort, config.host);
  try {
    if (metricsServer) await once(metricsServer, 'listening');
  } catch (error) {
    grpcServer.forceShutdown();
    decider.close();
    await Promise.all([figures.close(), edgeSpans.close()]);
    throw error;
  }

  return {
    grpcTarget,
    grpcAddress: formatGrpcTarget(grpcTarget),
    metricsPort: metricsServer ? (metricsServer.address() as AddressInfo).port : 0,
    metrics,
    get heldForWake() {
      return decider.heldForWake;
    },
    async close() {
      metricsServer?.closeAllConnections();
      accessLog.endStreams();
      decider.releaseHeld();
      await Promise.all([
        new Promise<void>((resolve) => (metricsServer ? metricsServer.close(() => resolve()) : resolve())),
        grpcServer.shutdown(SHUTDOWN_GRACE_MS),
      ]);
      await Promise.all([figures.close(), edgeSpans.close()]);
      decider.close();
    },
  };
}

/**
 * Envoy's Authorization service as proto-loader defines it, but Check's request decoded
 * by the fast walk to the request facts (proto-loader's full decode only when it is unsure),
 * and an allowed Check's response written straight to the wire (authz/ok-response-encoder.ts:
 * 3.5 µs against proto-loader's 7 to 12 µs, once the answer carried six metadata fields and
 * a traceparent). Denials stay proto-loader's.
 */
function authorizationService(trustExternalAddress: boolean): Record<string, GrpcMethodDefinition> {
  const { service } = loadAuthorizationService();
  const check = service.Check!;
  return {
    ...service,
    Check: {
      ...check,
      requestDeserialize: checkRequestDeserializer(check.requestDeserialize, trustExternalAddress),
      responseSerialize: (response: unknown) => (isOkCheckResponse(response) ? encodeOkCheckResponse(response) : check.responseSerialize(response as never)),
    },
  };
}
