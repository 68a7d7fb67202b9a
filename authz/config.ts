import { availableParallelism } from 'node:os';
import { keyPrefixProblem } from '../contract/key-prefix.js';

/**
 * Every setting of authz, read from the environment once at start into a frozen object.
 * Nothing else in authz/ reads process.env.
 */
export interface AuthzConfig {
  readonly redisUrl: string;
  /** Put before every Redis key; the control API's REDIS_KEY_PREFIX, so both name the projection alike. */
  readonly redisKeyPrefix: string;
  /** Agent hostnames are `<slug>.<agentDomain>`; any other hostname is a 404. */
  readonly agentDomain: string;
  readonly host: string;
  readonly grpcPort: number;
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
   * Processes serving Checks behind the one gRPC port (node:cluster; authz/cluster.ts), each
   * with its own Redis connection. 1 runs a single process, no cluster.
   */
  readonly workers: number;
}

/** WAKE_TIMEOUT_SECONDS's upper bound: envoy.yaml's ext_authz timeout (35 s) leaves 5 s above it. */
export const WAKE_TIMEOUT_MAX_SECONDS = 30;

export class AuthzConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid authz configuration:\n  - ${problems.join('\n  - ')}`);
    this.name = 'AuthzConfigError';
  }
}

type Env = Record<string, string | undefined>;

/** Reports every bad value at once rather than the first. */
export function loadAuthzConfig(env: Env): AuthzConfig {
  const problems: string[] = [];
  const read = (name: string) => (env[name] === '' ? undefined : env[name]);

  const integer = (name: string, fallback: number, min: number, max: number, why = ''): number => {
    const value = read(name);
    if (value === undefined) return fallback;
    const parsed = Number(value);
    if (Number.isInteger(parsed) && parsed >= min && parsed <= max) return parsed;
    problems.push(`${name}: expected an integer from ${min} to ${max}${why}, got "${value}"`);
    return fallback;
  };

  const redisUrl = read('REDIS_URL');
  if (redisUrl === undefined) problems.push('REDIS_URL: required (a redis:// URL); authz answers every Check from Redis');
  else if (!/^rediss?:\/\//.test(redisUrl)) problems.push(`REDIS_URL: expected a redis:// or rediss:// URL, got "${redisUrl}"`);

  const redisKeyPrefix = read('REDIS_KEY_PREFIX') ?? '';
  const prefixProblem = keyPrefixProblem('REDIS_KEY_PREFIX', redisKeyPrefix);
  if (prefixProblem) problems.push(prefixProblem);

  const agentDomain = (read('AGENT_DOMAIN') ?? 'agents.localhost').toLowerCase();
  if (!/^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/.test(agentDomain)) {
    problems.push(`AGENT_DOMAIN: expected a DNS name such as agents.example.com, got "${agentDomain}"`);
  }

  const trust = read('AUTHZ_TRUST_EXTERNAL_ADDRESS') ?? 'false';
  if (!['true', 'false', '1', '0'].includes(trust)) problems.push(`AUTHZ_TRUST_EXTERNAL_ADDRESS: expected true or false, got "${trust}"`);

  const config: AuthzConfig = {
    redisUrl: redisUrl ?? '',
    redisKeyPrefix,
    agentDomain,
    host: read('AUTHZ_HOST') ?? '127.0.0.1',
    grpcPort: integer('AUTHZ_GRPC_PORT', 7091, 0, 65535),
    metricsPort: integer('AUTHZ_METRICS_PORT', 7092, 0, 65535),
    trustExternalAddress: trust === 'true' || trust === '1',
    // A hung Redis is a caller's 503 in a tenth of a second; far below envoy.yaml's 35 s ext_authz timeout.
    redisTimeoutMs: integer('AUTHZ_REDIS_TIMEOUT_MS', 100, 1, 5_000),
    // A Check is one EVALSHA that Redis runs one at a time: 256 in flight already fill
    // the auto-pipeline; more would only wait inside Redis, past their deadline.
    maxInFlight: integer('AUTHZ_MAX_IN_FLIGHT', 256, 1, 100_000),
    // ~1,000 queued Checks are a few hundred ms of Redis work on one core: a longer queue
    // would only make callers wait (held wakes do not queue here: authz/server.ts).
    maxQueued: integer('AUTHZ_MAX_QUEUED', 1_024, 0, 1_000_000),
    // Below envoy.yaml's 35 s ext_authz timeout, so a held Check gets authz's own 503, not Envoy's.
    wakeTimeoutSeconds: integer('WAKE_TIMEOUT_SECONDS', 30, 1, WAKE_TIMEOUT_MAX_SECONDS, " (under envoy.yaml's 35 s ext_authz timeout)"),
    // A Check is CPU-bound in authz (Redis does its part elsewhere): one process per core.
    workers: integer('AUTHZ_WORKERS', availableParallelism(), 1, 256),
  };
  if (problems.length > 0) throw new AuthzConfigError(problems);
  return Object.freeze(config);
}
