import { performance } from 'node:perf_hooks';
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { PassObserver } from '../services/periodic-pass.js';

/** The loop whose last successful pass the flush lag is measured from (usage-flusher.ts). */
const FLUSH_LOOP = 'usage-flusher';

/**
 * The background loops' passes (control/services/periodic-pass.ts): durations by loop
 * and outcome, failures counted apart, and the usage-flush lag.
 */
export function loopMetrics(registry: Registry): PassObserver {
  const duration = new Histogram({
    name: 'agent_platform_control_loop_pass_duration_seconds',
    help: 'Duration of each pass of a background loop (reconciler, autoscaler, replica-meter, usage-flusher, housekeeping) by outcome: ran, skipped (another copy held the lock) or failed.',
    labelNames: ['loop', 'outcome'] as const,
    buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    registers: [registry],
  });
  const failures = new Counter({
    name: 'agent_platform_control_loop_pass_failures_total',
    help: 'Passes of a background loop that failed (logged; the next tick tries again).',
    labelNames: ['loop'] as const,
    registers: [registry],
  });
  // Measured from the start of this process until the first flush succeeds.
  let lastFlushed = performance.now();
  new Gauge({
    name: 'agent_platform_control_usage_flush_lag_seconds',
    help: "Seconds since the usage flusher last succeeded (or since start, before its first success): the edge's request counts waiting in Redis are at most this old. Normally below USAGE_FLUSH_INTERVAL_MS; growing means counts are not reaching Postgres.",
    registers: [registry],
    collect() {
      this.set((performance.now() - lastFlushed) / 1000);
    },
  });
  return ({ loop, outcome, durationMs }) => {
    duration.observe({ loop, outcome }, durationMs / 1000);
    if (outcome === 'failed') failures.inc({ loop });
    if (loop === FLUSH_LOOP && outcome === 'ran') lastFlushed = performance.now();
  };
}
