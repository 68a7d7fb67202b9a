import { Counter, Histogram, Registry } from 'prom-client';
import { processMetrics } from '../contract/process-metrics.js';
import type { Outcome } from './decision.js';

/** The metric label of each outcome. `error` is Redis failing, which the caller sees as a 503. */
const OUTCOME_LABELS: Record<Outcome, string> = {
  allowed: 'allowed',
  unknown_agent: 'denied_404',
  invalid_key: 'denied_401',
  caller_rate_limited: 'denied_429_caller',
  agent_rate_limited: 'denied_429_agent',
  no_replica: 'denied_503',
  wake_refused: 'wake_refused',
  wake_timeout: 'wake_timeout',
  unavailable: 'error',
  overloaded: 'shed',
  acme_challenge: 'acme_challenge',
  unknown_challenge: 'acme_challenge_404',
};

export interface AuthzMetrics {
  /** What GET /metrics serves: authz's families and the process's (CPU, heap, event-loop lag). */
  readonly registry: Registry;
  recordCheck(outcome: Outcome, seconds: number): void;
  recordRedisError(): void;
}

/** authz's Prometheus metrics, in a registry of its own (several authz can share a process in tests). */
export function createAuthzMetrics(): AuthzMetrics {
  const registry = new Registry();
  const checks = new Counter({
    name: 'authz_checks_total',
    help: 'Checks answered, by outcome.',
    labelNames: ['outcome'] as const,
    registers: [registry],
  });
  const latency = new Histogram({
    name: 'authz_check_duration_seconds',
    help: 'Time from receiving a Check to answering it.',
    // A Check is one Redis round trip (~1 ms); the last buckets show the deadline being hit.
    buckets: [0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25],
    registers: [registry],
  });
  const redisErrors = new Counter({
    name: 'authz_redis_errors_total',
    help: 'Checks whose Redis round trip failed or missed its deadline.',
    registers: [registry],
  });
  // With AUTHZ_WORKERS > 1 the primary's /metrics adds the workers' families up; this one
  // keeps each process apart, to see the workers share the load.
  const processChecks = new Counter({
    name: 'authz_process_checks_total',
    help: 'Checks answered by each authz process (a cluster worker, or the one process), by pid.',
    labelNames: ['pid'] as const,
    registers: [registry],
  }).labels(String(process.pid));
  processChecks.inc(0);
  // Each outcome's child looked up once, not per Check.
  const byOutcome = new Map(Object.entries(OUTCOME_LABELS).map(([outcome, label]) => [outcome as Outcome, checks.labels(label)]));
  for (const child of byOutcome.values()) child.inc(0);
  return {
    registry: Registry.merge([registry, processMetrics()]),
    recordCheck(outcome, seconds) {
      byOutcome.get(outcome)!.inc();
      processChecks.inc();
      latency.observe(seconds);
    },
    recordRedisError() {
      redisErrors.inc();
    },
  };
}
