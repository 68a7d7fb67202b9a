import { costOf, priceOf, type PriceTable } from '../domain/model-prices.js';
import type { SpanRow } from '../domain/trace-spans.js';
import type { AnyValue, ExportTraceServiceRequest, KeyValue, OtlpSpan } from '../schemas/otlp-traces.js';

/** Every span of the request, in order, as rows of `agentId`: whatever the body says, the token's agent is the owner. */
export function spanRowsOf(request: ExportTraceServiceRequest, agentId: string, prices: PriceTable): SpanRow[] {
  return (request.resourceSpans ?? []).flatMap((resource) =>
    (resource.scopeSpans ?? []).flatMap((scope) => (scope.spans ?? []).map((span) => spanRowOf(span, agentId, prices))),
  );
}

function spanRowOf(span: OtlpSpan, agentId: string, prices: PriceTable): SpanRow {
  const attributes = flatAttributes(span.attributes ?? []);
  const operation = textOf(attributes['gen_ai.operation.name']);
  const model = textOf(attributes['gen_ai.response.model']) ?? textOf(attributes['gen_ai.request.model']);
  const isModelCall = operation === 'chat';
  const inputTokens = isModelCall ? countOf(attributes['gen_ai.usage.input_tokens']) : null;
  const outputTokens = isModelCall ? countOf(attributes['gen_ai.usage.output_tokens']) : null;
  const price = isModelCall ? priceOf(prices, textOf(attributes['gen_ai.provider.name']), model) : undefined;
  return {
    agent_id: agentId,
    // Hex is case-free; one case keeps one trace one key.
    trace_id: span.traceId.toLowerCase(),
    span_id: span.spanId.toLowerCase(),
    parent_span_id: span.parentSpanId ? span.parentSpanId.toLowerCase() : null,
    name: span.name,
    kind: span.kind ?? 0,
    start_time: dateOfNanos(span.startTimeUnixNano),
    end_time: dateOfNanos(span.endTimeUnixNano),
    status_code: span.status?.code ?? 0,
    status_message: span.status?.message || null,
    operation,
    model: isModelCall ? model : null,
    input_tokens: inputTokens,
    output_tokens: outputTokens,
    cost_usd: isModelCall ? costOf(price, inputTokens, outputTokens) : null,
    attributes,
  };
}

/** OTLP's key-value list as one object, each value as plain JSON (an int as a number when it is a safe one). */
export function flatAttributes(list: KeyValue[]): Record<string, unknown> {
  const flat: Record<string, unknown> = {};
  for (const { key, value } of list) flat[key] = value === undefined ? null : plainValue(value);
  return flat;
}

function plainValue(value: AnyValue): unknown {
  if (value.stringValue !== undefined) return value.stringValue;
  if (value.boolValue !== undefined) return value.boolValue;
  if (value.intValue !== undefined) {
    const int = Number(value.intValue);
    return Number.isSafeInteger(int) ? int : String(value.intValue);
  }
  if (value.doubleValue !== undefined) return Number(value.doubleValue);
  if (value.arrayValue !== undefined) return (value.arrayValue.values ?? []).map((item) => (isAnyValue(item) ? plainValue(item) : null));
  if (value.bytesValue !== undefined) return value.bytesValue;
  return null;
}

const isAnyValue = (item: unknown): item is AnyValue => typeof item === 'object' && item !== null && !Array.isArray(item);

const textOf = (value: unknown): string | null => (typeof value === 'string' && value !== '' ? value : null);

const countOf = (value: unknown): number | null => (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 ? value : null);

/** Postgres keeps microseconds: the nanoseconds below them are dropped. */
function dateOfNanos(nanos: string | number): Date {
  return new Date(Number(BigInt(nanos) / 1_000_000n));
}

/**
 * The request as forwarded: only the spans that were stored (`stored` holds `traceId/spanId`
 * in lower case), each resource marked with the agent they were stored under, so a trace
 * backend can tell the platform's agents apart whatever their replicas said.
 */
export function storedPart(request: ExportTraceServiceRequest, agentId: string, stored: ReadonlySet<string>): ExportTraceServiceRequest {
  const resourceSpans = (request.resourceSpans ?? []).flatMap((resource) => {
    const scopeSpans = (resource.scopeSpans ?? [])
      .map((scope) => ({ ...scope, spans: (scope.spans ?? []).filter((span) => stored.has(spanKey(span.traceId, span.spanId))) }))
      .filter((scope) => scope.spans.length > 0);
    if (scopeSpans.length === 0) return [];
    const attributes = (resource.resource?.attributes ?? []).filter((attribute) => attribute.key !== AGENT_ID_ATTRIBUTE);
    return [{ ...resource, resource: { ...resource.resource, attributes: [...attributes, { key: AGENT_ID_ATTRIBUTE, value: { stringValue: agentId } }] }, scopeSpans }];
  });
  return { resourceSpans };
}

/** The resource attribute forwarded spans carry: the platform's id of the agent that sent them. */
export const AGENT_ID_ATTRIBUTE = 'platform.agent_id';

export const spanKey = (traceId: string, spanId: string) => `${traceId.toLowerCase()}/${spanId.toLowerCase()}`;
