import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { processMetrics } from '../contract/process-metrics.js';
import type { Outcome } from './decision.js';

/**
 * What Envoy does with each outcome: `allowed` sends the request on to the agent; `denied`
 * is authz answering the caller itself (a 4xx or 503, the ACME challenge's 200). The
 * outcome itself is the `reason` label.
 */
const DECISIONS: Record<Outcome, 'allowed' | 'denied'> = {
  allowed: 'allowed',
  unknown_agent: 'denied',
  invalid_key: 'denied',
  caller_rate_limited: 'denied',
  agent_rate_limited: 'denied',
  no_replica: 'denied',
  wake_refused: 'denied',
  wake_timeout: 'denied',
  unavailable: 'denied',
  overloaded: 'denied',
  acme_challenge: 'denied',
  unknown_challenge: 'denied',
};

export interface AuthzMetrics {
  /** What GET /metrics serves: authz's families and the process's (CPU, heap, event-loop lag). */
  readonly registry: Registry;
  recordCheck(outcome: Outcome, seconds: number): void;
  recordRedisError(): void;
}

export interface AuthzMetricsOptions {
  /**
   * This process's index among the cluster's workers (0 without a cluster): a replaced worker
   * takes its predecessor's index, so restarts make no new series (authz/cluster.ts).
   */
  worker: number;
}

/** authz's Prometheus metrics, in a registry of its own (several authz can share a process in tests). */
export function createAuthzMetrics({ worker }: AuthzMetricsOptions = { worker: 0 }): AuthzMetrics {
  const registry = new Registry();
  const checks = new Counter({
    name: 'agent_platform_authz_checks_total',
    help: "Checks answered, by decision (allowed: on to the agent; denied: authz answered the caller) and reason (the outcome, authz/decision.ts: unknown_agent, invalid_key, caller_rate_limited, agent_rate_limited, no_replica, wake_refused, wake_timeout, unavailable (Redis failed), overloaded (shed), acme_challenge, unknown_challenge; allowed for an allowed one).",
    labelNames: ['decision', 'reason'] as const,
    registers: [registry],
  });
  const latency = new Histogram({
    name: 'agent_platform_authz_check_duration_seconds',
    help: 'Time from receiving a Check to answering it.',
    // A Check is one Redis round trip (~1 ms); the last buckets show the deadline being hit.
    buckets: [0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25],
    registers: [registry],
  });
  const redisErrors = new Counter({
    name: 'agent_platform_authz_redis_errors_total',
    help: 'Checks whose Redis round trip failed or missed its deadline.',
    registers: [registry],
  });
  // With AUTHZ_WORKERS > 1 the primary's /metrics adds the workers' families up; this one
  // keeps each worker apart, to see them share the load.
  const workerChecks = new Counter({
    name: 'agent_platform_authz_worker_checks_total',
    help: 'Checks answered by each authz worker, by its index (0 to AUTHZ_WORKERS - 1; 0 for a single process). A replaced worker keeps the index.',
    labelNames: ['worker'] as const,
    registers: [registry],
  }).labels(String(worker));
  workerChecks.inc(0);
  // Each outcome's child looked up once, not per Check.
  const byOutcome = new Map(
    Object.entries(DECISIONS).map(([reason, decision]) => [reason as Outcome, checks.labels({ decision, reason })]),
  );
  for (const child of byOutcome.values()) child.inc(0);
  return {
    registry: Registry.merge([registry, processMetrics()]),
    recordCheck(outcome, seconds) {
      byOutcome.get(outcome)!.inc();
      workerChecks.inc();
      latency.observe(seconds);
    },
    recordRedisError() {
      redisErrors.inc();
    },
  };
}

/**
 * agent_platform_authz_ready, asked when Prometheus scrapes: the same question as /readyz.
 * Served by whichever process serves the ops port (a cluster's primary, whose own Redis
 * connection and workers decide it), beside the registry, not in it, so that a cluster's
 * workers do not each add a copy for the primary to sum.
 */
export function readinessMetrics(isReady: () => Promise<boolean>): Registry {
  const registry = new Registry();
  new Gauge({
    name: 'agent_platform_authz_ready',
    help: 'Whether authz is ready at scrape time, as GET /readyz answers: 1 when Redis answers within the Check deadline (and, in a cluster, a worker serves), else 0.',
    registers: [registry],
    async collect() {
      this.set((await isReady().catch(() => false)) ? 1 : 0);
    },
  });
  return registry;
}
