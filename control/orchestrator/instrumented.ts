import { performance } from 'node:perf_hooks';
import type { Orchestrator } from './types.js';

/** The calls of the port that go out to podman or Nomad; listeners and close are not timed. */
const TIMED_OPERATIONS = ['submit', 'scale', 'remove', 'reconcile', 'status', 'logs', 'metrics'] as const;

export type OrchestratorOperation = (typeof TIMED_OPERATIONS)[number];

/** One call to the driver, as metrics count and time it. */
export interface OrchestratorCallRecord {
  /** The driver's `name` (podman, nomad). */
  driver: string;
  operation: OrchestratorOperation;
  durationMs: number;
  /** The call rejected. */
  failed: boolean;
}

export type OrchestratorCallObserver = (call: OrchestratorCallRecord) => void;

/**
 * The same orchestrator, telling `observe` of every call's latency and outcome: one
 * decorator for both drivers, so neither carries metrics code. Results and errors pass
 * through untouched; an observer's fault is swallowed, never the driver's answer.
 */
export function instrumentOrchestrator(inner: Orchestrator, observe: OrchestratorCallObserver): Orchestrator {
  const timed = <A extends unknown[], R>(operation: OrchestratorOperation, call: (...args: A) => Promise<R>) =>
    async (...args: A): Promise<R> => {
      const started = performance.now();
      let failed = true;
      try {
        const result = await call(...args);
        failed = false;
        return result;
      } finally {
        try {
          observe({ driver: inner.name, operation, durationMs: performance.now() - started, failed });
        } catch {
          // Counting is best effort.
        }
      }
    };
  return {
    name: inner.name,
    warmParking: inner.warmParking,
    submit: timed('submit', (spec) => inner.submit(spec)),
    scale: timed('scale', (agentId, count, parked) => inner.scale(agentId, count, parked)),
    remove: timed('remove', (agentId) => inner.remove(agentId)),
    reconcile: timed('reconcile', (specs, options) => inner.reconcile(specs, options)),
    status: timed('status', (agentId) => inner.status(agentId)),
    logs: timed('logs', (agentId, query) => inner.logs(agentId, query)),
    metrics: timed('metrics', (agentId) => inner.metrics(agentId)),
    onChange: (listener) => inner.onChange(listener),
    onProgress: (listener) => inner.onProgress(listener),
    close: () => inner.close(),
  };
}

export const ORCHESTRATOR_OPERATIONS: readonly OrchestratorOperation[] = TIMED_OPERATIONS;
