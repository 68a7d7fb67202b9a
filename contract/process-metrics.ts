import { collectDefaultMetrics, Registry } from 'prom-client';

let processRegistry: Registry | undefined;

/**
 * prom-client's default metrics (CPU, memory, heap, event-loop lag, GC, handles) in a
 * registry made once per process, served by both the control API's and authz's /metrics
 * beside their own families. Once per process, because they describe the process, not one
 * control API or authz built in it (tests build several), and each collectDefaultMetrics
 * call would start another event-loop monitor and GC observer. Here rather than in each
 * side, so that both show the same names (docs/operations/grafana-dashboard.json uses them).
 */
export function processMetrics(): Registry {
  if (!processRegistry) {
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry });
  }
  return processRegistry;
}
