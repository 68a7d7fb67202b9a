import { Type, type Static } from '@sinclair/typebox';

/**
 * OTLP/HTTP JSON's ExportTraceServiceRequest as replicas send it to POST /v1/traces
 * (docs/contract.md, "Traces API v1"; opentelemetry-proto trace/v1/trace.proto under the
 * JSON mapping of the OTLP spec: ids in hex, 64-bit integers as decimal strings or
 * numbers, enums as integers). Only the fields the platform reads are checked; the others
 * (events, links, flags, dropped counts) are let through and not kept.
 */

const Hex = (bytes: number, options: { allowEmpty?: boolean } = {}) =>
  Type.String({ pattern: options.allowEmpty ? `^(?:[0-9a-fA-F]{${2 * bytes}})?$` : `^[0-9a-fA-F]{${2 * bytes}}$` });

/** A fixed64 in OTLP JSON: a decimal string (the spec's form) or a number. */
const UnixNano = Type.Union([Type.String({ pattern: '^[0-9]{1,20}$' }), Type.Integer({ minimum: 0 })]);

/** AnyValue: one of its fields; arrays and maps are kept as they come and flattened leniently. */
const AnyValue = Type.Object({
  stringValue: Type.Optional(Type.String({ maxLength: 65_536 })),
  boolValue: Type.Optional(Type.Boolean()),
  intValue: Type.Optional(Type.Union([Type.String({ pattern: '^-?[0-9]{1,20}$' }), Type.Integer()])),
  doubleValue: Type.Optional(Type.Union([Type.Number(), Type.String()])),
  arrayValue: Type.Optional(Type.Object({ values: Type.Optional(Type.Array(Type.Unknown())) })),
  kvlistValue: Type.Optional(Type.Unknown()),
  bytesValue: Type.Optional(Type.String()),
});

export const KeyValue = Type.Object({ key: Type.String({ minLength: 1, maxLength: 256 }), value: Type.Optional(AnyValue) });
export type KeyValue = Static<typeof KeyValue>;
export type AnyValue = Static<typeof AnyValue>;

export const OtlpSpan = Type.Object({
  traceId: Hex(16),
  spanId: Hex(8),
  parentSpanId: Type.Optional(Hex(8, { allowEmpty: true })),
  name: Type.String({ maxLength: 1024 }),
  // SpanKind: 0 unspecified … 5 consumer.
  kind: Type.Optional(Type.Integer({ minimum: 0, maximum: 5 })),
  startTimeUnixNano: UnixNano,
  endTimeUnixNano: UnixNano,
  attributes: Type.Optional(Type.Array(KeyValue, { maxItems: 256 })),
  // StatusCode: 0 unset, 1 ok, 2 error.
  status: Type.Optional(Type.Object({ code: Type.Optional(Type.Integer({ minimum: 0, maximum: 2 })), message: Type.Optional(Type.String({ maxLength: 4096 })) })),
});
export type OtlpSpan = Static<typeof OtlpSpan>;

export const ExportTraceServiceRequest = Type.Object({
  resourceSpans: Type.Optional(Type.Array(Type.Object({
    resource: Type.Optional(Type.Object({ attributes: Type.Optional(Type.Array(KeyValue)) })),
    scopeSpans: Type.Optional(Type.Array(Type.Object({
      scope: Type.Optional(Type.Object({ name: Type.Optional(Type.String()) })),
      spans: Type.Optional(Type.Array(OtlpSpan)),
    }))),
  }))),
});
export type ExportTraceServiceRequest = Static<typeof ExportTraceServiceRequest>;
