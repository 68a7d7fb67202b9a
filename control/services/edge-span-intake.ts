import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { EDGE_SPANS_KEY, parseEdgeSpan, type EdgeSpan } from '../../contract/edge-trace.js';
import { PlatformError } from '../domain/errors.js';
import type { ExportTraceServiceRequest } from '../schemas/otlp-traces.js';
import { PeriodicPass, PeriodicService, type LoopOptions } from './periodic-pass.js';
import type { TraceIngest } from './trace-ingest.js';

/** Every second: an edge span waits at most this long before its invocation shows it. */
export const EDGE_SPAN_INTAKE_INTERVAL_MS = 1_000;
/** Spans taken per RPOP, and at most this many RPOPs a pass, so a backlog is worked off in bounded steps. */
const BATCH_SPANS = 1_000;
const BATCHES_PER_PASS = 10;

/** The edge's spans' resource and scope in the stored and forwarded traces. */
const EDGE_SERVICE_NAME = 'agent-platform-edge';

/**
 * Takes the edge's spans of invokes (contract/edge-trace.ts) from their Redis queue into
 * each agent's traces, through the same ingest as a replica's spans: the agent's daily cap,
 * the days kept and forwarding apply alike. Each copy of the control API drains the queue;
 * RPOP hands each span to one of them. A span is taken once: a crash between the RPOP and
 * the insert loses it (traces are not usage; nothing billed is made from an edge span).
 */
export class EdgeSpanIntake extends PeriodicService {
  protected readonly loop: PeriodicPass;

  constructor(
    private readonly redis: Redis,
    private readonly ingest: TraceIngest,
    private readonly logger: Logger,
    options: LoopOptions & { intervalMs?: number },
  ) {
    super();
    const { intervalMs = EDGE_SPAN_INTAKE_INTERVAL_MS, ...loopOptions } = options;
    this.loop = new PeriodicPass({ ...loopOptions, loop: 'edge-span-intake', intervalMs, logger, pass: () => this.pass(), failureMessage: 'taking edge spans in failed; the next pass tries again' });
  }

  private async pass(): Promise<void> {
    for (let batch = 0; batch < BATCHES_PER_PASS; batch += 1) {
      const texts = (await this.redis.rpop(EDGE_SPANS_KEY, BATCH_SPANS)) ?? [];
      const byAgent = new Map<string, EdgeSpan[]>();
      for (const text of texts) {
        const span = parseEdgeSpan(text);
        if (!span) continue;
        const spans = byAgent.get(span.agentId);
        if (spans) spans.push(span);
        else byAgent.set(span.agentId, [span]);
      }
      for (const [agentId, spans] of byAgent) await this.store(agentId, spans);
      if (texts.length < BATCH_SPANS) return;
    }
  }

  private async store(agentId: string, spans: EdgeSpan[]): Promise<void> {
    try {
      await this.ingest.ingest(agentId, exportRequestOf(spans));
    } catch (error) {
      // The agent was deleted since its request: its spans go with it.
      if (error instanceof PlatformError && error.code === 'UNAUTHENTICATED') return;
      this.logger.warn({ err: error, agent_id: agentId, spans: spans.length }, "an agent's edge spans could not be stored; they are dropped");
    }
  }
}

/**
 * OTLP JSON of the edge's spans, named and attributed after the HTTP semantic conventions
 * for a server span (`{method} {route}`, http.request.method, url.path,
 * http.response.status_code; status error for a 5xx or no answer at all, unset otherwise).
 */
export function exportRequestOf(spans: EdgeSpan[]): ExportTraceServiceRequest {
  return {
    resourceSpans: [{
      resource: { attributes: [{ key: 'service.name', value: { stringValue: EDGE_SERVICE_NAME } }] },
      scopeSpans: [{ scope: { name: EDGE_SERVICE_NAME }, spans: spans.map(otlpSpanOf) }],
    }],
  };
}

function otlpSpanOf(span: EdgeSpan) {
  const failed = span.status === 0 || span.status >= 500;
  return {
    traceId: span.traceId,
    spanId: span.spanId,
    parentSpanId: span.parentSpanId ?? '',
    name: `${span.method} ${span.path}`,
    kind: 2, // SERVER
    startTimeUnixNano: unixNanos(span.startMs),
    endTimeUnixNano: unixNanos(span.startMs + span.durationMs),
    attributes: [
      { key: 'http.request.method', value: { stringValue: span.method } },
      { key: 'url.path', value: { stringValue: span.path } },
      { key: 'http.response.status_code', value: { intValue: String(span.status) } },
      { key: 'platform.request_id', value: { stringValue: span.requestId } },
      { key: 'platform.version', value: { stringValue: span.canary ? 'canary' : 'stable' } },
    ],
    status: failed ? { code: 2, message: span.status === 0 ? 'no answer reached the caller' : `answered ${span.status}` } : { code: 0 },
  };
}

/** Milliseconds (with a fraction) as nanoseconds in a decimal string, exact beyond 2^53. */
function unixNanos(ms: number): string {
  const whole = Math.floor(ms);
  return String(BigInt(whole) * 1_000_000n + BigInt(Math.round((ms - whole) * 1e6)));
}
