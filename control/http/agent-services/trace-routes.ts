import { decodeTraceRequest, encodeTraceResponse, PROTOBUF_CONTENT_TYPE, type TracePartialSuccess } from '../../../proto/otlp-traces.js';
import { PlatformError } from '../../domain/errors.js';
import { ExportTraceServiceRequest } from '../../schemas/otlp-traces.js';
import type { TraceIngest } from '../../services/trace-ingest.js';
import { defineAgentRoute } from './agent-route.js';

/** A request of OTLP/HTTP holds a batch of spans; 4 MiB is the OpenTelemetry Collector's default receiver limit too. */
export const MAX_TRACE_BODY_BYTES = 4 * 1024 * 1024;

/** OTLP/HTTP's other encoding, the one OpenTelemetry SDKs send by default (OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf). */
const OTLP_PROTOBUF = {
  contentType: PROTOBUF_CONTENT_TYPE,
  describes: 'a protobuf ExportTraceServiceRequest',
  decode: decodeTraceRequest,
  encode: (body: unknown) => encodeTraceResponse((body as { partialSuccess?: TracePartialSuccess }).partialSuccess),
};

/**
 * Traces API v1 (docs/contract.md): OTLP/HTTP, with a JSON or a protobuf body, as the OTLP
 * spec lays out: 200 with an ExportTraceServiceResponse in the request's encoding, its
 * `partialSuccess` set when some spans were refused (daily cap, out of the days kept); 400
 * for a body that is not an ExportTraceServiceRequest, 413 past 4 MiB, 415 for another
 * content type, 429 past TRACE_REQUESTS_PER_SECOND (the OTLP spec's throttling answer, with
 * Retry-After). Every span goes under the token's agent.
 */
export const traceRoutes = (ingest: TraceIngest) => [
  defineAgentRoute({
    method: 'post',
    path: '/traces',
    body: ExportTraceServiceRequest,
    limit: {
      maxBytes: MAX_TRACE_BODY_BYTES,
      tooLarge: () => new PlatformError('PAYLOAD_TOO_LARGE', `The request body is larger than ${MAX_TRACE_BODY_BYTES} bytes; send the spans in smaller batches`),
    },
    alternateEncoding: OTLP_PROTOBUF,
    admit: (credential) => ingest.admit(credential.agentId),
    invalidBody: (error) => new PlatformError('INVALID_TRACES', error.message, error.details),
    handler: async ({ credential, body }) => {
      const outcome = await ingest.ingest(credential.agentId, body);
      return { status: 200, body: outcome.rejectedSpans === 0 ? {} : { partialSuccess: outcome } };
    },
  }),
];
