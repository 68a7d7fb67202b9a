import { keyPrefixProblem } from '../../contract/key-prefix.js';
import { DEFAULT_AGENT_SUBNET_POOL, parseSubnetPool, type SubnetPool } from '../../contract/agent-subnet-pool.js';
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
 * EDGE_MAX_CONNECTIONS_PER_ADDRESS (defaults: DEFAULT_EDGE_CLIENT_LIMITS); EDGE_UPSTREAM_SUBNETS
 * (the ranges replicas may be in, comma-separated; default the podman agent subnet pool, so
 * set it as PODMAN_AGENT_SUBNETS); REDIS_URL (required) and REDIS_KEY_PREFIX for the request figures.
 * HTTPS (envoy.yaml's TLS listener): EDGE_TLS_CERT_FILE and EDGE_TLS_KEY_FILE (both or
 * neither; neither: plain HTTP only), EDGE_HTTPS_PORT (7443) and EDGE_HTTP_REDIRECT
 * (false; true answers plain HTTP with 308 to https, and needs the two files).
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
  const upstreamSubnets: SubnetPool[] = [];
  for (const cidr of (env.EDGE_UPSTREAM_SUBNETS || DEFAULT_AGENT_SUBNET_POOL).split(',').map((item) => item.trim()).filter(Boolean)) {
    try {
      upstreamSubnets.push(parseSubnetPool('EDGE_UPSTREAM_SUBNETS', cidr));
    } catch (error) {
      problems.push((error as Error).message);
    }
  }
  const certFile = env.EDGE_TLS_CERT_FILE || undefined;
  const keyFile = env.EDGE_TLS_KEY_FILE || undefined;
  const httpsPort = integer('EDGE_HTTPS_PORT', 7443, 0, 65535);
  if ((certFile === undefined) !== (keyFile === undefined)) {
    problems.push(`EDGE_TLS_CERT_FILE and EDGE_TLS_KEY_FILE: set both (the certificate chain and its private key, PEM) or neither, got only ${certFile ? 'EDGE_TLS_CERT_FILE' : 'EDGE_TLS_KEY_FILE'}`);
  }
  const tls = certFile && keyFile ? Object.freeze({ certFile, keyFile, port: httpsPort }) : undefined;
  const redirect = env.EDGE_HTTP_REDIRECT || 'false';
  if (redirect !== 'true' && redirect !== 'false') problems.push(`EDGE_HTTP_REDIRECT: expected true or false, got "${redirect}"`);
  const httpRedirect = redirect === 'true';
  if (httpRedirect && !tls) problems.push('EDGE_HTTP_REDIRECT: true sends plain HTTP to https, which needs EDGE_TLS_CERT_FILE and EDGE_TLS_KEY_FILE');
  if (tls && httpsPort !== 0 && httpsPort === port) problems.push(`EDGE_HTTPS_PORT: must differ from EDGE_PORT (${port})`);
  const redisUrl = env.REDIS_URL ?? '';
  if (!/^rediss?:\/\//.test(redisUrl)) problems.push(`REDIS_URL: required (a redis:// URL); agents' request figures are written there, got "${redisUrl}"`);
  const redisKeyPrefix = env.REDIS_KEY_PREFIX ?? '';
  const prefixProblem = keyPrefixProblem('REDIS_KEY_PREFIX', redisKeyPrefix);
  if (prefixProblem) problems.push(prefixProblem);
  if (problems.length > 0) throw new Error(`Invalid local edge configuration:\n  - ${problems.join('\n  - ')}`);
  return Object.freeze({
    host: env.EDGE_HOST || '127.0.0.1', port, authzAddress, consoleOrigin, clientLimits: Object.freeze(clientLimits), upstreamSubnets, redisUrl, redisKeyPrefix,
    tls, httpRedirect,
  });
}
