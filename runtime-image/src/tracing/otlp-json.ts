import type { AttributeValue, Attributes, FinishedSpan } from './spans.js';

/** Who sent the spans: the OTLP resource and instrumentation scope of every request. */
export interface SpanOrigin {
  serviceName: string;
  agentId: string;
}

export const SCOPE_NAME = 'agent-runtime';

type AnyValue =
  | { stringValue: string }
  | { intValue: string }
  | { doubleValue: number }
  | { boolValue: boolean }
  | { arrayValue: { values: AnyValue[] } };

/**
 * An OTLP/HTTP JSON ExportTraceServiceRequest, following opentelemetry-proto's JSON mapping:
 * lowerCamelCase field names, trace and span ids as lowercase hex (not base64), 64-bit
 * integers (times, intValue) as decimal strings, enums (kind, status code) as numbers.
 */
export function encodeExportRequest(origin: SpanOrigin, spans: readonly FinishedSpan[]) {
  return {
    resourceSpans: [
      {
        resource: { attributes: encodeAttributes({ 'service.name': origin.serviceName, 'platform.agent.id': origin.agentId }) },
        scopeSpans: [{ scope: { name: SCOPE_NAME }, spans: spans.map(encodeSpan) }],
      },
    ],
  };
}

function encodeSpan(span: FinishedSpan) {
  return {
    traceId: span.traceId,
    spanId: span.spanId,
    ...(span.parentSpanId === undefined ? {} : { parentSpanId: span.parentSpanId }),
    name: span.name,
    kind: span.kind,
    startTimeUnixNano: span.startNs.toString(),
    endTimeUnixNano: span.endNs.toString(),
    attributes: encodeAttributes(span.attributes),
    status: span.status,
  };
}

function encodeAttributes(attributes: Attributes): Array<{ key: string; value: AnyValue }> {
  return Object.entries(attributes).map(([key, value]) => ({ key, value: encodeValue(value) }));
}

function encodeValue(value: AttributeValue): AnyValue {
  if (typeof value === 'string') return { stringValue: value };
  if (typeof value === 'boolean') return { boolValue: value };
  if (typeof value === 'number') return Number.isSafeInteger(value) ? { intValue: String(value) } : { doubleValue: value };
  return { arrayValue: { values: value.map((item) => ({ stringValue: item })) } };
}

/** Spans the receiver refused in an otherwise successful answer (ExportTracePartialSuccess.rejectedSpans). */
export function rejectedSpans(body: unknown): number {
  if (typeof body !== 'object' || body === null) return 0;
  const partial = (body as { partialSuccess?: { rejectedSpans?: unknown } }).partialSuccess;
  const rejected = Number(partial?.rejectedSpans ?? 0);
  return Number.isSafeInteger(rejected) && rejected > 0 ? rejected : 0;
}
