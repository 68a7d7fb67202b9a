import { Counter, Histogram, type Registry } from 'prom-client';
import type { OrchestratorCallObserver } from '../orchestrator/instrumented.js';

/** Calls to the driver (orchestrator/instrumented.ts) timed and their failures counted, by driver and operation. */
export function orchestratorMetrics(registry: Registry): OrchestratorCallObserver {
  const labelNames = ['driver', 'operation'] as const;
  const duration = new Histogram({
    name: 'agent_platform_control_orchestrator_call_duration_seconds',
    help: 'Latency of calls to the orchestrator driver (podman or nomad), by operation, failed ones included.',
    labelNames,
    // A status read is milliseconds; a submit that pulls an image or waits on Nomad takes seconds.
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    registers: [registry],
  });
  const errors = new Counter({
    name: 'agent_platform_control_orchestrator_call_errors_total',
    help: 'Calls to the orchestrator driver that failed, by driver and operation.',
    labelNames,
    registers: [registry],
  });
  return ({ driver, operation, durationMs, failed }) => {
    duration.observe({ driver, operation }, durationMs / 1000);
    if (failed) errors.inc({ driver, operation });
  };
}
