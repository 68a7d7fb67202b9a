import type { Logger } from 'pino';
import { encodeTraceRequest, PROTOBUF_CONTENT_TYPE } from '../../proto/otlp-traces.js';
import type { TraceForwarding } from '../config/trace-settings.js';
import type { ExportTraceServiceRequest } from '../schemas/otlp-traces.js';

/** Why forwarded spans were lost: the queue was full, or the receiver did not take them in time. */
export type ForwardDropReason = 'queue_full' | 'failed';
export type ForwardDroppedObserver = (reason: ForwardDropReason, spans: number) => void;

interface Queued {
  request: ExportTraceServiceRequest;
  spans: number;
}

/**
 * Sends the spans the platform stored on to the operator's OTLP/HTTP receiver (Tempo,
 * Jaeger, Honeycomb, a Collector), in OTEL_EXPORTER_OTLP_PROTOCOL's encoding (protobuf unless
 * told JSON), one request at a time, after the replica has
 * had its answer: a slow or unreachable receiver never slows an ingest. The queue is
 * bounded and nothing is retried; what is lost is counted (`agent_platform_trace_forward_dropped_spans_total`).
 */
export class TraceForwarder {
  private readonly queue: Queued[] = [];
  private draining: Promise<void> | undefined;

  constructor(
    private readonly settings: TraceForwarding,
    private readonly logger: Logger,
    private readonly onDropped?: ForwardDroppedObserver,
  ) {}

  forward(request: ExportTraceServiceRequest, spans: number): void {
    if (spans === 0) return;
    if (this.queue.length >= this.settings.queueRequests) {
      this.onDropped?.('queue_full', spans);
      return;
    }
    this.queue.push({ request, spans });
    this.draining ??= this.drain().finally(() => {
      this.draining = undefined;
    });
  }

  /** Resolves once the queue is empty: what is queued at shutdown gets its chance, each send within its deadline. */
  async idle(): Promise<void> {
    while (this.draining) await this.draining;
  }

  private async drain(): Promise<void> {
    for (let next = this.queue.shift(); next; next = this.queue.shift()) {
      try {
        await this.send(next.request);
      } catch (error) {
        this.onDropped?.('failed', next.spans);
        this.logger.warn({ err: error, spans: next.spans }, 'forwarding spans to OTEL_EXPORTER_OTLP_ENDPOINT failed; they are dropped');
      }
    }
  }

  private async send(request: ExportTraceServiceRequest): Promise<void> {
    const protobuf = this.settings.protocol === 'http/protobuf';
    const response = await fetch(`${this.settings.endpoint.replace(/\/+$/, '')}/v1/traces`, {
      method: 'POST',
      headers: { ...this.settings.headers, 'content-type': protobuf ? PROTOBUF_CONTENT_TYPE : 'application/json' },
      body: protobuf ? encodeTraceRequest(request) : JSON.stringify(request),
      signal: AbortSignal.timeout(this.settings.timeoutMs),
    });
    // The body is read so the connection is free for the next request; its content does not matter here.
    await response.arrayBuffer();
    if (!response.ok) throw new Error(`the receiver answered ${response.status}`);
  }
}
