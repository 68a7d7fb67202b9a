import { keyPrefixProblem } from '../../contract/key-prefix.js';
import { DEFAULT_AGENT_SUBNET_POOL, parseSubnetPool, type SubnetPool } from '../../contract/agent-subnet-pool.js';
import { formatGrpcTarget, parseGrpcTarget } from '../../contract/grpc-target.js';
import { ConfigError, readSettings, type Env, type SettingDocs, type SettingReader } from '../../contract/settings-reader.js';
import { AUTHZ_SOCKET_PATH } from './envoy-parity.js';
import { DEFAULT_EDGE_CLIENT_LIMITS, type LocalEdgeOptions } from './server.js';

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
  return Object.freeze(readSettings(env, readLocalEdgeConfig, (problems) => new ConfigError(problems, 'local edge')));
}

function readLocalEdgeConfig(read: SettingReader): LocalEdgeConfig {
  const port = read.port('EDGE_PORT', 7080);
  const authzAddress = read.string('AUTHZ_ADDRESS', formatGrpcTarget({ path: AUTHZ_SOCKET_PATH }));
  const authzTarget = parseGrpcTarget(authzAddress);
  if ('problem' in authzTarget) read.report(`AUTHZ_ADDRESS: authz's gRPC server, ${authzTarget.problem}`);
  // An Origin header is scheme://host[:port], nothing after: anything else would never match.
  const consoleOrigin = read.matching('CONSOLE_ORIGIN', 'http://127.0.0.1:7070', /^https?:\/\/[^/\s]+$/, 'scheme://host[:port] without a path, as a browser sends Origin');
  const clientLimits = {
    headersTimeoutMs: read.integer('EDGE_HEADERS_TIMEOUT_MS', DEFAULT_EDGE_CLIENT_LIMITS.headersTimeoutMs, 100, 600_000),
    requestTimeoutMs: read.integer('EDGE_REQUEST_TIMEOUT_MS', DEFAULT_EDGE_CLIENT_LIMITS.requestTimeoutMs, 100, 3_600_000),
    maxConnectionsPerAddress: read.integer('EDGE_MAX_CONNECTIONS_PER_ADDRESS', DEFAULT_EDGE_CLIENT_LIMITS.maxConnectionsPerAddress, 1, 1_000_000),
  };
  // Node refuses a headersTimeout longer than requestTimeout.
  if (clientLimits.headersTimeoutMs > clientLimits.requestTimeoutMs) {
    read.report('EDGE_HEADERS_TIMEOUT_MS: must not exceed EDGE_REQUEST_TIMEOUT_MS (the headers are part of the request)');
  }
  const upstreamSubnets: SubnetPool[] = [];
  for (const cidr of read.string('EDGE_UPSTREAM_SUBNETS', DEFAULT_AGENT_SUBNET_POOL).split(',').map((item) => item.trim()).filter(Boolean)) {
    try {
      upstreamSubnets.push(parseSubnetPool('EDGE_UPSTREAM_SUBNETS', cidr));
    } catch (error) {
      read.report((error as Error).message);
    }
  }
  const certFile = read.optionalString('EDGE_TLS_CERT_FILE') ?? undefined;
  const keyFile = read.optionalString('EDGE_TLS_KEY_FILE') ?? undefined;
  const httpsPort = read.port('EDGE_HTTPS_PORT', 7443);
  if ((certFile === undefined) !== (keyFile === undefined)) {
    read.report(`EDGE_TLS_CERT_FILE and EDGE_TLS_KEY_FILE: set both (the certificate chain and its private key, PEM) or neither, got only ${certFile ? 'EDGE_TLS_CERT_FILE' : 'EDGE_TLS_KEY_FILE'}`);
  }
  const tls = certFile && keyFile ? Object.freeze({ certFile, keyFile, port: httpsPort }) : undefined;
  const httpRedirect = read.boolean('EDGE_HTTP_REDIRECT', false, { true: ['true'], false: ['false'] });
  if (httpRedirect && !tls) read.report('EDGE_HTTP_REDIRECT: true sends plain HTTP to https, which needs EDGE_TLS_CERT_FILE and EDGE_TLS_KEY_FILE');
  if (tls && httpsPort !== 0 && httpsPort === port) read.report(`EDGE_HTTPS_PORT: must differ from EDGE_PORT (${port})`);
  const redisUrl = read.string('REDIS_URL', '');
  if (!/^rediss?:\/\//.test(redisUrl)) read.report(`REDIS_URL: required (a redis:// URL); agents' request figures are written there, got "${redisUrl}"`);
  const redisKeyPrefix = read.string('REDIS_KEY_PREFIX', '');
  const prefixProblem = keyPrefixProblem('REDIS_KEY_PREFIX', redisKeyPrefix);
  if (prefixProblem) read.report(prefixProblem);
  return {
    host: read.string('EDGE_HOST', '127.0.0.1'), port, authzAddress, consoleOrigin, clientLimits: Object.freeze(clientLimits), upstreamSubnets, redisUrl, redisKeyPrefix,
    tls, httpRedirect,
  };
}

/** What each setting means, for docs/configuration.md (scripts/lib/configuration-reference.ts reads the rest from the reads). */
export const LOCAL_EDGE_SETTING_DOCS: SettingDocs = {
  EDGE_HOST: 'Address the edge listens on.',
  EDGE_PORT: 'Port of plain HTTP.',
  EDGE_HTTPS_PORT: 'Port of HTTPS, when EDGE_TLS_CERT_FILE and EDGE_TLS_KEY_FILE are set; must differ from EDGE_PORT.',
  EDGE_TLS_CERT_FILE: "PEM certificate chain of the agent domain (`*.<AGENT_DOMAIN>`); with EDGE_TLS_KEY_FILE, or neither (plain HTTP only).",
  EDGE_TLS_KEY_FILE: 'PEM private key of EDGE_TLS_CERT_FILE.',
  EDGE_HTTP_REDIRECT: 'Answer plain HTTP with 308 to https (needs the TLS files).',
  AUTHZ_ADDRESS: "authz's gRPC server as gRPC names it: `unix:/path` of its socket, or host:port (envoy.yaml's authz cluster).",
  CONSOLE_ORIGIN: "The web console's origin, whose CORS preflights the edge answers (as envoy.yaml's CorsPolicy).",
  EDGE_HEADERS_TIMEOUT_MS: "A client's request headers must arrive within this; at most EDGE_REQUEST_TIMEOUT_MS.",
  EDGE_REQUEST_TIMEOUT_MS: 'A whole request must arrive within this.',
  EDGE_MAX_CONNECTIONS_PER_ADDRESS: 'Open connections per client address.',
  EDGE_UPSTREAM_SUBNETS: "The ranges replicas may be in, comma-separated CIDRs; set as the control API's PODMAN_AGENT_SUBNETS.",
  REDIS_URL: "The Redis agents' request figures are written to (authz's REDIS_URL).",
  REDIS_KEY_PREFIX: "The installation's REDIS_KEY_PREFIX, as the control API and authz are given.",
};
