import { LOOPBACK_UPSTREAMS } from './edge-upstream.js';
import { pino } from 'pino';
import { systemClock } from '../../contract/clock.js';
import { loadAuthzConfig, type AuthzServerKind } from '../../authz/config.js';
import { startAuthz } from '../../authz/server.js';
import { connectRedis } from '../../control/db/redis.js';
import { startLocalEdge } from '../../envoy/local-edge/server.js';
import { openDomainCertificates } from '../../envoy/local-edge/domain-certificates.js';
import { TLS_SERVER_POLICY } from '../../envoy/local-edge/tls-policy.js';
import { createRequestFigureRecorder } from '../../contract/request-figure-recorder.js';
import { createEdgeSpanRecorder } from '../../contract/edge-trace.js';
import type { TestControl } from './control-harness.js';
import { tempAuthzSocket } from './edge-authz.js';

export interface LocalEdgeStack {
  /** Where callers connect; the agent's hostname goes in Host. */
  url: string;
  port: number;
  /** With `tls`: the HTTPS port (SNI picks the certificate). */
  httpsPort: number | null;
  close(): Promise<void>;
}

/**
 * The edge in front of a test control's agents, as production pairs them: authz on a Unix
 * socket the local edge connects to, as Envoy does to its sidecar; authz reads the
 * control's projection with the control's REDIS_KEY_PREFIX (and connects as authz/main.ts
 * does), and the local edge obeys authz and writes agents' request figures there, as
 * envoy/local-edge/main.ts does.
 */
export interface LocalEdgeStackOptions {
  /** Default 0 (any free port); a browser test fixes it first, as agents' URLs name it (AGENT_URL_PORT). */
  port?: number;
  /** The web console's origin, whose CORS preflights the edge answers (CONSOLE_ORIGIN). */
  consoleOrigin?: string;
  /** authz's WAKE_TIMEOUT_SECONDS (default 30). */
  wakeTimeoutSeconds?: number;
  /** authz's AUTHZ_SERVER (default: its own). */
  authzServer?: AuthzServerKind;
  /**
   * authz's AUTHZ_REDIS_TIMEOUT_MS (default 100): a suite that starts and stops containers
   * while it counts answers raises it, so that a Check slowed by the loaded machine is not
   * the edge's fail-closed 503 in a count that is about something else.
   */
  authzRedisTimeoutMs?: number;
  /**
   * HTTPS beside the plain port, as envoy/local-edge/main.ts serves it: the agent domain's
   * pair from these files, custom domains' certificates from the projection in Redis.
   */
  tls?: { certFile: string; keyFile: string };
}

export async function startLocalEdgeStack(control: TestControl, options: LocalEdgeStackOptions = {}): Promise<LocalEdgeStack> {
  const socket = tempAuthzSocket();
  const config = loadAuthzConfig({
    REDIS_URL: process.env.TEST_REDIS_URL, REDIS_KEY_PREFIX: control.config.redisKeyPrefix,
    AUTHZ_GRPC_SOCKET: socket.path, AUTHZ_METRICS_PORT: '0', AGENT_DOMAIN: control.config.agentUrl.domain,
    WAKE_TIMEOUT_SECONDS: options.wakeTimeoutSeconds === undefined ? undefined : String(options.wakeTimeoutSeconds),
    AUTHZ_SERVER: options.authzServer,
    AUTHZ_REDIS_TIMEOUT_MS: options.authzRedisTimeoutMs === undefined ? undefined : String(options.authzRedisTimeoutMs),
  });
  const redis = connectRedis(config.redisUrl, config.redisKeyPrefix);
  const authz = await startAuthz(config, { redis, clock: systemClock, logger: pino({ level: 'silent' }) });
  const requestFigures = createRequestFigureRecorder({
    redis,
    onError: (error) => {
      throw error;
    },
  });
  // Invokes' edge spans, into the Redis queue the control API's edge-span intake drains (as local-edge/main.ts).
  const edgeSpans = createEdgeSpanRecorder({
    redis,
    flushIntervalMs: 100,
    onError: (error) => {
      throw error;
    },
  });
  // Replicas are on the control's agent subnet pool (podman) or on loopback (the fake Nomad's allocations, test upstreams).
  const upstreamSubnets = [control.config.podman.agentSubnets, ...LOOPBACK_UPSTREAMS];
  const customDomains = options.tls
    ? openDomainCertificates({ redis, subscriber: redis.duplicate(), keyPrefix: config.redisKeyPrefix, policy: TLS_SERVER_POLICY })
    : undefined;
  const tls = options.tls && { ...options.tls, port: 0, customDomains };
  const edge = await startLocalEdge({ port: options.port ?? 0, consoleOrigin: options.consoleOrigin, authzAddress: authz.grpcAddress, requestFigures, edgeSpans, upstreamSubnets, tls });
  return {
    url: `http://127.0.0.1:${edge.port}`,
    port: edge.port,
    httpsPort: edge.httpsPort,
    async close() {
      await edge.close();
      customDomains?.close();
      await requestFigures.close();
      await edgeSpans.close();
      await authz.close();
      redis.disconnect();
      socket.remove();
    },
  };
}
