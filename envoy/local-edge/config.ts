import { keyPrefixProblem } from '../../contract/key-prefix.js';
import { formatGrpcTarget, parseGrpcTarget } from '../../contract/grpc-target.js';
import { AUTHZ_SOCKET_PATH } from './envoy-parity.js';
import { DEFAULT_EDGE_CLIENT_LIMITS, type LocalEdgeOptions } from './server.js';

type Env = Record<string, string | undefined>;

/** The local edge's settings: the server's options, and the Redis its request figures go to. */
export interface LocalEdgeConfig extends LocalEdgeOptions {
  /** Where agents' request figures are written (docs/contract.md, "Request figures"), as authz's REDIS_URL. */
  readonly redisUrl: string;
  /** The installation's REDIS_KEY_PREFIX, as the control API and authz are given. */
  readonly redisKeyPrefix: string;
}

/**
 * EDGE_HOST (127.0.0.1), EDGE_PORT (7080), AUTHZ_ADDRESS (authz's gRPC server as gRPC names
 * it: unix:/path of its socket, or host:port; default unix:/run/agent-platform/authz.sock,
 * envoy.yaml's authz cluster), CONSOLE_ORIGIN (the web console's origin, whose CORS preflights the edge
 * answers: http://127.0.0.1:7070, as envoy.yaml's CorsPolicy), and the client limits EDGE_HEADERS_TIMEOUT_MS, EDGE_REQUEST_TIMEOUT_MS and
 * EDGE_MAX_CONNECTIONS_PER_ADDRESS (defaults: DEFAULT_EDGE_CLIENT_LIMITS); REDIS_URL (required)
 * and REDIS_KEY_PREFIX for the request figures.
 */
export function loadLocalEdgeConfig(env: Env): Readonly<LocalEdgeConfig> {
  const problems: string[] = [];
  const integer = (name: string, fallback: number, min: number, max: number): number => {
    const value = env[name];
    if (value === undefined || value === '') return fallback;
    const parsed = Number(value);
    if (Number.isInteger(parsed) && parsed >= min && parsed <= max) return parsed;
    problems.push(`${name}: expected an integer from ${min} to ${max}, got "${value}"`);
    return fallback;
  };
  const port = integer('EDGE_PORT', 7080, 0, 65535);
  const authzAddress = env.AUTHZ_ADDRESS || formatGrpcTarget({ path: AUTHZ_SOCKET_PATH });
  const authzTarget = parseGrpcTarget(authzAddress);
  if ('problem' in authzTarget) problems.push(`AUTHZ_ADDRESS: authz's gRPC server, ${authzTarget.problem}`);
  const consoleOrigin = env.CONSOLE_ORIGIN || 'http://127.0.0.1:7070';
  // An Origin header is scheme://host[:port], nothing after: anything else would never match.
  if (!/^https?:\/\/[^/\s]+$/.test(consoleOrigin)) problems.push(`CONSOLE_ORIGIN: expected scheme://host[:port] without a path, as a browser sends Origin, got "${consoleOrigin}"`);
  const clientLimits = {
    headersTimeoutMs: integer('EDGE_HEADERS_TIMEOUT_MS', DEFAULT_EDGE_CLIENT_LIMITS.headersTimeoutMs, 100, 600_000),
    requestTimeoutMs: integer('EDGE_REQUEST_TIMEOUT_MS', DEFAULT_EDGE_CLIENT_LIMITS.requestTimeoutMs, 100, 3_600_000),
    maxConnectionsPerAddress: integer('EDGE_MAX_CONNECTIONS_PER_ADDRESS', DEFAULT_EDGE_CLIENT_LIMITS.maxConnectionsPerAddress, 1, 1_000_000),
  };
  // Node refuses a headersTimeout longer than requestTimeout.
  if (clientLimits.headersTimeoutMs > clientLimits.requestTimeoutMs) {
    problems.push('EDGE_HEADERS_TIMEOUT_MS: must not exceed EDGE_REQUEST_TIMEOUT_MS (the headers are part of the request)');
  }
  const redisUrl = env.REDIS_URL ?? '';
  if (!/^rediss?:\/\//.test(redisUrl)) problems.push(`REDIS_URL: required (a redis:// URL); agents' request figures are written there, got "${redisUrl}"`);
  const redisKeyPrefix = env.REDIS_KEY_PREFIX ?? '';
  const prefixProblem = keyPrefixProblem('REDIS_KEY_PREFIX', redisKeyPrefix);
  if (prefixProblem) problems.push(prefixProblem);
  if (problems.length > 0) throw new Error(`Invalid local edge configuration:\n  - ${problems.join('\n  - ')}`);
  return Object.freeze({
    host: env.EDGE_HOST || '127.0.0.1', port, authzAddress, consoleOrigin, clientLimits: Object.freeze(clientLimits), redisUrl, redisKeyPrefix,
  });
}
