import { formatTraceParent, newSpanId, newTraceId, nowNanos, type TraceParent } from './trace-context.js';

/** A span attribute: strings, integers (`intValue`), other numbers (`doubleValue`), booleans or string arrays. */
export type AttributeValue = string | number | boolean | readonly string[];
export type Attributes = Record<string, AttributeValue>;

/** OTLP's Span.SpanKind numbers. */
export const SPAN_KIND = { INTERNAL: 1, SERVER: 2, CLIENT: 3 } as const;
export type SpanKind = (typeof SPAN_KIND)[keyof typeof SPAN_KIND];

/** OTLP's Status.StatusCode numbers. */
export const STATUS_CODE = { OK: 1, ERROR: 2 } as const;

export interface FinishedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string | undefined;
  name: string;
  kind: SpanKind;
  startNs: bigint;
  endNs: bigint;
  attributes: Attributes;
  status: { code: (typeof STATUS_CODE)[keyof typeof STATUS_CODE]; message?: string };
}

/** Takes finished spans; never blocks and never throws (the exporter drops what it cannot hold). */
export interface SpanSink {
  enqueue(span: FinishedSpan): void;
}

/** A span being recorded. Ends once: a second end or fail is ignored. */
export class ActiveSpan {
  private readonly startNs = nowNanos();
  private ended = false;

  constructor(
    private readonly sink: SpanSink,
    readonly traceId: string,
    readonly spanId: string,
    private readonly parentSpanId: string | undefined,
    private readonly name: string,
    private readonly kind: SpanKind,
    private readonly attributes: Attributes,
  ) {}

  /** Sets an attribute; undefined leaves it out. */
  set(key: string, value: AttributeValue | undefined): this {
    if (value !== undefined) this.attributes[key] = value;
    return this;
  }

  end(): void {
    this.finish({ code: STATUS_CODE.OK });
  }

  /**
   * Ends the span as failed. `errorType` is low-cardinality (an error code or class name);
   * `message` only when it is safe to keep (no caller text, no provider text that could echo a key).
   */
  fail(errorType: string, message?: string): void {
    this.attributes['error.type'] = errorType;
    this.finish({ code: STATUS_CODE.ERROR, ...(message === undefined ? {} : { message }) });
  }

  private finish(status: FinishedSpan['status']): void {
    if (this.ended) return;
    this.ended = true;
    this.sink.enqueue({
      traceId: this.traceId,
      spanId: this.spanId,
      parentSpanId: this.parentSpanId,
      name: this.name,
      kind: this.kind,
      startNs: this.startNs,
      endNs: nowNanos(),
      attributes: this.attributes,
      status,
    });
  }
}

/** The trace of one invoke: its root span, and the children model and tool calls add under it. */
export interface InvokeTrace {
  readonly root: ActiveSpan;
  /** Whether message and tool text may be recorded (TRACE_CONTENT). */
  readonly recordContent: boolean;
  /** gen_ai.provider.name of the agent's model. */
  readonly providerName: string | undefined;
  startChild(name: string, kind: SpanKind, attributes: Attributes): ActiveSpan;
  /** The `traceparent` naming the root span, for the invoke's response. */
  traceparent(): string;
}

export interface InvokeStart {
  /** The caller's `traceparent`, already parsed; undefined starts a new trace. */
  parent: TraceParent | undefined;
  /** The edge's `x-request-id`. */
  requestId: string | undefined;
}

/** Starts a trace per invoke; undefined when tracing is off, so callers skip all recording. */
export interface Tracer {
  startInvoke(start: InvokeStart): InvokeTrace | undefined;
}

export const tracingOff: Tracer = { startInvoke: () => undefined };

export interface InvokeTracerOptions {
  agentId: string;
  agentName: string;
  providerName: string | undefined;
  recordContent: boolean;
  sink: SpanSink;
}

export function createInvokeTracer(options: InvokeTracerOptions): Tracer {
  return {
    startInvoke(start) {
      const traceId = start.parent?.traceId ?? newTraceId();
      const root = new ActiveSpan(options.sink, traceId, newSpanId(), start.parent?.spanId, `invoke_agent ${options.agentName}`, SPAN_KIND.SERVER, {
        'gen_ai.operation.name': 'invoke_agent',
        'gen_ai.agent.id': options.agentId,
        'gen_ai.agent.name': options.agentName,
      });
      root.set('platform.request_id', start.requestId);
      return {
        root,
        recordContent: options.recordContent,
        providerName: options.providerName,
        startChild: (name, kind, attributes) => new ActiveSpan(options.sink, traceId, newSpanId(), root.spanId, name, kind, attributes),
        traceparent: () => formatTraceParent(traceId, root.spanId),
      };
    },
  };
}
