import { availableParallelism } from 'node:os';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { keyPrefixProblem } from '../contract/key-prefix.js';
import { isUnixSocket, parseGrpcTarget, socketPathProblem, type GrpcTarget } from '../contract/grpc-target.js';
import { ConfigError, readSettings, type Env, type SettingDocs, type SettingReader } from '../contract/settings-reader.js';

/**
 * Every setting of authz, read from the environment once at start into a frozen object,
 * through the platform's one reader (contract/settings-reader.ts).
 */
export interface AuthzConfig {
  readonly redisUrl: string;
  /** Put before every Redis key; the control API's REDIS_KEY_PREFIX, so both name the projection alike. */
  readonly redisKeyPrefix: string;
  /** Agent hostnames are `<slug>.<agentDomain>`; any other hostname is a 404. */
  readonly agentDomain: string;
  /**
   * Where the gRPC server (Check, the access-log stream, health) listens: the Unix socket
   * AUTHZ_GRPC_SOCKET, authz as Envoy's sidecar (docs/nomad.md), or AUTHZ_GRPC_LISTEN's
   * host:port. Exactly one of the two; nothing listens on TCP for gRPC without the second.
   */
  readonly grpcListen: GrpcTarget;
  /** AUTHZ_HOST: the address of the metrics and probes port (AUTHZ_METRICS_PORT), which stays on TCP. */
  readonly host: string;
  readonly metricsPort: number;
  /**
   * Read the caller from `x-envoy-external-address` instead of the Check's source address.
   * Only behind trusted proxies (envoy.yaml `xff_num_trusted_hops` > 0, see envoy/README.md
   * "Client address"); otherwise every caller would share the proxy's address.
   */
  readonly trustExternalAddress: boolean;
  /** Deadline of the one Redis round trip of a Check; past it the Check is a 503. */
  readonly redisTimeoutMs: number;
  /** Checks this process sends to Redis at once; more wait in the queue. */
  readonly maxInFlight: number;
  /** Checks waiting for a slot; past this a Check is shed at once as a 503 with Retry-After. */
  readonly maxQueued: number;
  /**
   * How long a Check for a parked agent waits for it to wake (docs/edge.md, "Wake"); past
   * it the answer is a 503 with Retry-After. envoy.yaml's ext_authz timeout must exceed it.
   */
  readonly wakeTimeoutSeconds: number;
  /**
   * Processes serving Checks behind the one gRPC socket or port (node:cluster; authz/cluster.ts), each
   * with its own Redis connection. 1 runs a single process, no cluster.
   */
  readonly workers: number;
  /**
   * Which gRPC server answers Envoy (AUTHZ_SERVER): `own`, authz's HTTP/2 server
   * (authz/grpc-server.ts, the default), or `grpc-js`, @grpc/grpc-js's Server
   * (authz/grpc-js-server.ts), the well-kept library to fall back on should the own server
   * ever misbehave. The same services, handlers and bounds either way (docs/edge.md).
   */
  readonly grpcServer: AuthzServerKind;
  /**
   * Envoy's HTTPS listener and custom domains' certificates by ADS (authz/xds/), on the Unix
   * socket AUTHZ_XDS_SOCKET; null: no xDS server (the local edge serves its own HTTPS).
   */
  readonly xds: XdsConfig | null;
}

export interface XdsConfig {
  readonly socketPath: string;
  /** envoy/tls-listener.yaml: the HTTPS listener's template. */
  readonly tlsListenerFile: string;
  /** The envoy.yaml Envoy runs, whose plain listener's filters the HTTPS listener shares. */
  readonly envoyConfigFile: string;
}

export const AUTHZ_SERVER_KINDS = ['own', 'grpc-js'] as const;
export type AuthzServerKind = (typeof AUTHZ_SERVER_KINDS)[number];

/** WAKE_TIMEOUT_SECONDS's upper bound: envoy.yaml's ext_authz timeout (35 s) leaves 5 s above it. */
export const WAKE_TIMEOUT_MAX_SECONDS = 30;

/** authz's settings refused, each problem named (an instance of the shared ConfigError). */
export class AuthzConfigError extends ConfigError {
  constructor(problems: string[]) {
    super(problems, 'authz');
    this.name = 'AuthzConfigError';
  }
}

const DNS_NAME = /^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/;

/** Reports every bad value at once rather than the first. */
export function loadAuthzConfig(env: Env): AuthzConfig {
  return Object.freeze(readSettings(env, readAuthzConfig, (problems) => new AuthzConfigError(problems)));
}

function readAuthzConfig(read: SettingReader): AuthzConfig {
  const redisUrl = read.optionalString('REDIS_URL');
  if (redisUrl === null) read.report('REDIS_URL: required (a redis:// URL); authz answers every Check from Redis');
  else if (!/^rediss?:\/\//.test(redisUrl)) read.report(`REDIS_URL: expected a redis:// or rediss:// URL, got "${redisUrl}"`);

  const redisKeyPrefix = read.string('REDIS_KEY_PREFIX', '');
  const prefixProblem = keyPrefixProblem('REDIS_KEY_PREFIX', redisKeyPrefix);
  if (prefixProblem) read.report(prefixProblem);

  const agentDomain = read.string('AGENT_DOMAIN', 'agents.localhost').toLowerCase();
  if (!DNS_NAME.test(agentDomain)) read.report(`AGENT_DOMAIN: expected a DNS name such as agents.example.com, got "${agentDomain}"`);

  const trustExternalAddress = read.boolean('AUTHZ_TRUST_EXTERNAL_ADDRESS', false, { true: ['true', '1'], false: ['false', '0'] });

  const grpcServer = read.parsed<AuthzServerKind>('AUTHZ_SERVER', 'own', (value) => {
    if ((AUTHZ_SERVER_KINDS as readonly string[]).includes(value)) return value as AuthzServerKind;
    throw new Error(`AUTHZ_SERVER: expected own (authz's HTTP/2 server) or grpc-js (@grpc/grpc-js's, the fallback), got "${value}"`);
  });

  return {
    redisUrl: redisUrl ?? '',
    redisKeyPrefix,
    agentDomain,
    grpcListen: grpcListenTarget(read),
    host: read.string('AUTHZ_HOST', '127.0.0.1'),
    metricsPort: read.port('AUTHZ_METRICS_PORT', 7092),
    trustExternalAddress,
    // A hung Redis is a caller's 503 in a tenth of a second; far below envoy.yaml's 35 s ext_authz timeout.
    redisTimeoutMs: read.integer('AUTHZ_REDIS_TIMEOUT_MS', 100, 1, 5_000),
    // A Check is one EVALSHA that Redis runs one at a time: 256 in flight already fill
    // the auto-pipeline; more would only wait inside Redis, past their deadline.
    maxInFlight: read.integer('AUTHZ_MAX_IN_FLIGHT', 256, 1, 100_000),
    // ~1,000 queued Checks are a few hundred ms of Redis work on one core: a longer queue
    // would only make callers wait (held wakes do not queue here: authz/server.ts).
    maxQueued: read.integer('AUTHZ_MAX_QUEUED', 1_024, 0, 1_000_000),
    // Below envoy.yaml's 35 s ext_authz timeout, so a held Check gets authz's own 503, not Envoy's.
    wakeTimeoutSeconds: read.integer('WAKE_TIMEOUT_SECONDS', 30, 1, WAKE_TIMEOUT_MAX_SECONDS, "under envoy.yaml's 35 s ext_authz timeout"),
    // A Check is CPU-bound in authz (Redis does its part elsewhere): one process per core.
    workers: read.integer('AUTHZ_WORKERS', availableParallelism(), 1, 256),
    grpcServer,
    xds: xdsConfig(read),
  };
}

/** Relative file settings name the package's own copies: envoy/ beside dist/ in the platform image (Containerfile), or a checkout's. */
const PACKAGE_ROOT = fileURLToPath(new URL(import.meta.url.includes('/dist/') ? '../../' : '../', import.meta.url));

function xdsConfig(read: SettingReader): XdsConfig | null {
  const socketPath = read.optionalString('AUTHZ_XDS_SOCKET');
  const tlsListenerFile = resolve(PACKAGE_ROOT, read.string('AUTHZ_XDS_TLS_LISTENER_FILE', 'envoy/tls-listener.yaml'));
  const envoyConfigFile = resolve(PACKAGE_ROOT, read.string('AUTHZ_XDS_ENVOY_CONFIG_FILE', 'envoy/envoy.yaml'));
  if (socketPath === null) return null;
  const problem = socketPathProblem(socketPath);
  if (problem) read.report(`AUTHZ_XDS_SOCKET: ${problem}`);
  return { socketPath, tlsListenerFile, envoyConfigFile };
}

/**
 * AUTHZ_GRPC_SOCKET or AUTHZ_GRPC_LISTEN, one of them and never a default: a socket path
 * every host has and only authz's user may create does not exist (a world-writable
 * directory such as /tmp would let another local user take the path first, and Envoy
 * would send that user its Checks), and a TCP port open by default is what this setting
 * exists to avoid.
 */
function grpcListenTarget(read: SettingReader): GrpcTarget {
  const socket = read.optionalString('AUTHZ_GRPC_SOCKET');
  const listen = read.optionalString('AUTHZ_GRPC_LISTEN');
  const unset: GrpcTarget = { path: '' };
  if (read.optionalString('AUTHZ_GRPC_PORT') !== null) {
    read.report('AUTHZ_GRPC_PORT: no longer read; authz serves gRPC on the Unix socket AUTHZ_GRPC_SOCKET (Envoy\'s sidecar), or on AUTHZ_GRPC_LISTEN=host:port');
  }
  if (socket !== null && listen !== null) {
    read.report('AUTHZ_GRPC_SOCKET, AUTHZ_GRPC_LISTEN: set one, not both');
    return unset;
  }
  if (socket !== null) {
    const problem = socketPathProblem(socket);
    if (problem) read.report(`AUTHZ_GRPC_SOCKET: ${problem}`);
    return { path: socket };
  }
  if (listen !== null) {
    const target = parseGrpcTarget(listen);
    if ('problem' in target || isUnixSocket(target)) {
      read.report(`AUTHZ_GRPC_LISTEN: expected host:port (e.g. 10.0.0.5:7091; a socket goes in AUTHZ_GRPC_SOCKET), got "${listen}"`);
      return unset;
    }
    return target;
  }
  read.report(
    'AUTHZ_GRPC_SOCKET or AUTHZ_GRPC_LISTEN: required, one of them. AUTHZ_GRPC_SOCKET: the path of the Unix socket ' +
      "Envoy reaches authz on, its sidecar (envoy.yaml's authz cluster names it); AUTHZ_GRPC_LISTEN: host:port of a TCP " +
      'listener, for an Envoy on another host, which then needs mTLS in front of authz or a network policy that lets only Envoy in (docs/edge.md)',
  );
  return unset;
}

/** What each setting means, for docs/configuration.md (scripts/lib/configuration-reference.ts reads the rest from the reads). */
export const AUTHZ_SETTING_DOCS: SettingDocs = {
  REDIS_URL: 'The Redis authz answers every Check from (the projection the control API writes).',
  REDIS_KEY_PREFIX: "The control API's REDIS_KEY_PREFIX, so both name the projection alike.",
  AGENT_DOMAIN: 'Agent hostnames are `<slug>.<AGENT_DOMAIN>`; any other hostname is a 404.',
  AUTHZ_TRUST_EXTERNAL_ADDRESS: "Read the caller from `x-envoy-external-address` instead of the Check's source address (only behind trusted proxies: envoy/README.md, \"Client address\").",
  AUTHZ_SERVER: "Which gRPC server answers Envoy: `own` (authz's HTTP/2 server) or `grpc-js` (@grpc/grpc-js's, the fallback).",
  AUTHZ_GRPC_SOCKET: "Unix socket of the gRPC server (Check, access logs, health), authz as Envoy's sidecar. Set this or AUTHZ_GRPC_LISTEN.",
  AUTHZ_XDS_SOCKET:
    "Unix socket of authz's xDS server (ADS: Envoy's HTTPS listener with a filter chain per custom domain, and their certificates by SDS). Unset: none; envoy.yaml's authz_xds cluster names it.",
  AUTHZ_XDS_TLS_LISTENER_FILE: "The HTTPS listener's template (envoy/tls-listener.yaml; a relative path is the package's). Read at start when AUTHZ_XDS_SOCKET is set.",
  AUTHZ_XDS_ENVOY_CONFIG_FILE: 'The envoy.yaml Envoy runs (a relative path is the package\'s): the HTTPS listener gets its plain listener (agent_edge) filters. Read at start when AUTHZ_XDS_SOCKET is set.',
  AUTHZ_GRPC_LISTEN: 'host:port of a TCP gRPC listener, for an Envoy on another host (then put mTLS or a network policy in front). Set this or AUTHZ_GRPC_SOCKET.',
  AUTHZ_GRPC_PORT: 'Refused: no longer read; use AUTHZ_GRPC_SOCKET or AUTHZ_GRPC_LISTEN.',
  AUTHZ_HOST: 'Address of the metrics and probes port.',
  AUTHZ_METRICS_PORT: 'Port of /metrics, /livez, /readyz and /healthz.',
  AUTHZ_REDIS_TIMEOUT_MS: "Deadline of a Check's one Redis round trip; past it the Check is a 503.",
  AUTHZ_MAX_IN_FLIGHT: 'Checks this process sends to Redis at once; more wait in the queue.',
  AUTHZ_MAX_QUEUED: 'Checks waiting for a slot; past this a Check is shed at once as a 503 with Retry-After.',
  WAKE_TIMEOUT_SECONDS: "How long a Check for a parked agent waits for it to wake before a 503 with Retry-After.",
  AUTHZ_WORKERS: { text: 'Processes serving Checks behind the one socket or port (node:cluster); 1 runs a single process.', default: 'the CPU count (availableParallelism)' },
};
