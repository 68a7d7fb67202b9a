import { Counter, type Registry } from 'prom-client';
import type { ForwardDroppedObserver } from '../services/trace-forwarder.js';
import type { SpansDroppedObserver } from '../services/trace-ingest.js';

/**
 * Spans replicas sent that were not stored (docs/traces.md): an agent at its daily cap, or
 * spans outside the days kept; and stored spans that could not be forwarded.
 */
export function traceMetrics(registry: Registry): { onSpansDropped: SpansDroppedObserver; onForwardDropped: ForwardDroppedObserver } {
  const dropped = new Counter({
    name: 'agent_platform_trace_spans_dropped_total',
    help: "Spans sent to POST /v1/traces and not stored, by reason: daily_cap (the agent passed TRACE_SPANS_PER_AGENT_PER_DAY) or outside_retention (a start before TRACE_RETENTION_DAYS ago or after tomorrow).",
    labelNames: ['reason'] as const,
    registers: [registry],
  });
  const forwardDropped = new Counter({
    name: 'agent_platform_trace_forward_dropped_spans_total',
    help: 'Stored spans not forwarded to OTEL_EXPORTER_OTLP_ENDPOINT, by reason: queue_full (TRACE_FORWARD_QUEUE_REQUESTS requests were waiting) or failed (an error, a non-2xx answer, or OTEL_EXPORTER_OTLP_TIMEOUT passed).',
    labelNames: ['reason'] as const,
    registers: [registry],
  });
  return {
    onSpansDropped: (reason, count) => dropped.inc({ reason }, count),
    onForwardDropped: (reason, count) => forwardDropped.inc({ reason }, count),
  };
}
