import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { Clock } from '../contract/clock.js';
import type { AuthzConfig } from './config.js';
import type { RequestFacts } from './check-request.js';
import { defineCheckScript } from './check-script.js';
import { createAdmission } from './admission.js';
import { createChecker } from './checker.js';
import type { CheckResult, Decision } from './decision.js';
import type { AuthzMetrics } from './metrics.js';
import { REDIS_ERROR_LOG_INTERVAL_MS, throttled } from './throttled.js';
import { createWakeWaiter } from './wake-waiter.js';
import { DOMAIN_HOSTS_RELOAD_MS, openDomainHosts } from './domain-hosts.js';
import { edgeKeyNames } from '../contract/edge-keys.js';

export interface DeciderDeps {
  redis: Redis;
  clock: Clock;
  logger: Logger;
  metrics: AuthzMetrics;
}

/**
 * authz's work for one Check, apart from the transport that carried it: admission (shed
 * beyond AUTHZ_MAX_IN_FLIGHT + AUTHZ_MAX_QUEUED), the one Redis round trip, the wait for a
 * parked agent's wake, and the Check's metrics. The gRPC Check (authz/server.ts) is a
 * decoder in front of it and an encoder behind; bench/inprocess-edge.ts calls it directly
 * to measure what the gRPC hop costs the local edge (docs/edge.md).
 */
export interface Decider {
  /** Never rejects: every failure is already a decision (fail closed). */
  decide(facts: RequestFacts): Promise<Decision>;
  /** Checks held now for a parked agent's wake. */
  readonly heldForWake: number;
  /** Answers every held Check now, as at its timeout, so a shutdown does not wait out the wakes. */
  releaseHeld(): void;
  /** Settled once the custom hostnames were first read (or failed to be): serve after it. */
  readonly ready: Promise<void>;
  /** Closes the wake subscriber: after the transport has stopped taking Checks. */
  close(): void;
}

/** A shed Check's answer: the queue drains within a second at any load authz can bear. */
const SHED: Decision = { outcome: 'overloaded', retryAfterSeconds: 1 };

export function createDecider(config: AuthzConfig, deps: DeciderDeps): Decider {
  const { metrics } = deps;
  const logRedisError = throttled(REDIS_ERROR_LOG_INTERVAL_MS, (error: Error) =>
    deps.logger.warn({ err: error }, 'Redis failed a Check; answering 503 until it recovers'),
  );
  const onRedisError = (error: Error) => {
    metrics.recordRedisError();
    logRedisError(error);
  };
  const admit = createAdmission({ maxInFlight: config.maxInFlight, maxQueued: config.maxQueued });

  // One subscriber connection per process, for two channels: Checks held for a parked
  // agent wait on it outside admission (a wake of many seconds must not take the slots of
  // Checks that need only Redis), and the custom hostnames' copy is told of changes on it.
  const subscriber = deps.redis.duplicate({ enableAutoPipelining: false, enableOfflineQueue: true });
  subscriber.on('error', () => undefined);
  const customHosts = openDomainHosts({
    redis: deps.redis,
    subscriber,
    keyPrefix: config.redisKeyPrefix,
    reloadIntervalMs: DOMAIN_HOSTS_RELOAD_MS,
    // Not a Check's failure (agent_platform_authz_redis_errors_total counts those): the copy keeps what it
    // had, and the Check script still proves each custom hostname.
    onRedisError: throttled(REDIS_ERROR_LOG_INTERVAL_MS, (error: Error) =>
      deps.logger.warn({ err: error }, "Redis failed a read of the custom domains; authz keeps the copy it has"),
    ),
  });
  const check = createChecker(config, {
    runCheckScript: defineCheckScript(deps.redis),
    customHosts,
    readChallenge: (token) => deps.redis.get(edgeKeyNames.acmeChallenge(token)),
    clock: deps.clock,
    onRedisError,
  });
  const wakes = createWakeWaiter({
    redis: deps.redis,
    subscriber,
    keyPrefix: config.redisKeyPrefix,
    clock: deps.clock,
    timeoutMs: config.wakeTimeoutSeconds * 1000,
    redisTimeoutMs: config.redisTimeoutMs,
    onRedisError,
  });

  return {
    decide(facts) {
      const started = process.hrtime.bigint();
      // A shed Check is a denial like any other (503 + Retry-After), never a gRPC error,
      // so Envoy answers the caller with it rather than with status_on_error.
      const admitted = admit(() => check(facts));
      const checked: Promise<CheckResult> = admitted === 'shed' ? Promise.resolve(SHED) : admitted;
      const decided = checked.then((result) => (result.outcome === 'parked' ? wakes.wait(result) : result));
      return decided.then((decision) => {
        metrics.recordCheck(decision.outcome, Number(process.hrtime.bigint() - started) / 1e9);
        return decision;
      });
    },
    get heldForWake() {
      return wakes.held;
    },
    releaseHeld() {
      wakes.releaseAll();
    },
    ready: customHosts.loaded,
    close() {
      customHosts.close();
      subscriber.disconnect();
    },
  };
}
