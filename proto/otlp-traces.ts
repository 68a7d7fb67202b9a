import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import protobuf from 'protobufjs';

/**
 * OTLP/HTTP protobuf for traces, from the official definitions in
 * proto/opentelemetry-proto (copied unchanged from opentelemetry-proto v1.11.0).
 *
 * The platform works on the OTLP/HTTP JSON form of a request (control/schemas/otlp-traces.ts):
 * what the OTLP spec's JSON mapping gives, ids as hex and 64-bit integers as decimal
 * strings. This module turns protobuf into that form and back, so one validation and one
 * ingest serve both encodings (the OTLP spec, "OTLP/HTTP": a receiver should take both).
 */

export const OTLP_PROTO_DIR = join(dirname(fileURLToPath(import.meta.url)), 'opentelemetry-proto');
export const TRACE_SERVICE_PROTO = 'opentelemetry/proto/collector/trace/v1/trace_service.proto';
export const PROTOBUF_CONTENT_TYPE = 'application/x-protobuf';

/** The fields that OTLP JSON writes in hex where protobuf's JSON mapping would use base64 (Span and Span.Link). */
const ID_FIELDS = new Set(['traceId', 'spanId', 'parentSpanId']);

interface TraceTypes {
  request: protobuf.Type;
  response: protobuf.Type;
}

let loaded: TraceTypes | undefined;

/** Loaded once per process, the first time protobuf is used. */
function traceTypes(): TraceTypes {
  if (loaded) return loaded;
  const root = new protobuf.Root();
  root.resolvePath = (_origin, target) => join(OTLP_PROTO_DIR, target);
  root.loadSync(TRACE_SERVICE_PROTO);
  root.resolveAll();
  loaded = {
    request: root.lookupType('opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest'),
    response: root.lookupType('opentelemetry.proto.collector.trace.v1.ExportTraceServiceResponse'),
  };
  return loaded;
}

/** The JSON form of a protobuf ExportTraceServiceRequest; throws on bytes that are not one. */
export function decodeTraceRequest(bytes: Uint8Array): unknown {
  const { request } = traceTypes();
  const message = request.decode(bytes);
  const object = request.toObject(message, { longs: String, enums: Number, bytes: String, arrays: false, defaults: false });
  return convertIds(object, (base64) => Buffer.from(base64, 'base64').toString('hex'));
}

/** A request in OTLP JSON form (checked against its schema already), as protobuf bytes. */
export function encodeTraceRequest(json: unknown): Uint8Array<ArrayBuffer> {
  const { request } = traceTypes();
  const withBytes = convertIds(json, (hex) => Buffer.from(hex, 'hex'));
  // A copy of its own, not a slice of protobufjs's shared pool, so it can be a fetch body.
  return new Uint8Array(request.encode(request.fromObject(withBytes as Record<string, unknown>)).finish());
}

export interface TracePartialSuccess {
  rejectedSpans?: number;
  errorMessage?: string;
}

/** ExportTraceServiceResponse, as a receiver answers a protobuf request. */
export function encodeTraceResponse(partialSuccess?: TracePartialSuccess): Uint8Array {
  const { response } = traceTypes();
  return response.encode(response.fromObject(partialSuccess ? { partialSuccess } : {})).finish();
}

export function decodeTraceResponse(bytes: Uint8Array): { partialSuccess?: TracePartialSuccess } {
  const { response } = traceTypes();
  return response.toObject(response.decode(bytes), { longs: Number, defaults: false });
}

/** A copy of `value` with every id field converted; the ids sit at most a few levels down (request → resource spans → scope spans → span → link). */
function convertIds(value: unknown, convert: (id: string) => unknown): unknown {
  if (Array.isArray(value)) return value.map((item) => convertIds(item, convert));
  if (value === null || typeof value !== 'object' || value instanceof Uint8Array) return value;
  const copy: Record<string, unknown> = {};
  for (const [key, field] of Object.entries(value)) {
    copy[key] = ID_FIELDS.has(key) && typeof field === 'string' ? convert(field) : key === 'attributes' ? field : convertIds(field, convert);
  }
  return copy;
}
