import { status as GrpcStatus } from '@grpc/grpc-js';
import type { Decision } from './decision.js';
import { formatTraceParent, TRACE_METADATA_KEYS, type EdgeTraceContext } from '../contract/edge-trace.js';
import { AGENT_ID_METADATA_KEY, VERSION_METADATA_KEY } from './access-log-entry.js';

/**
 * Envoy's CheckResponse for a decision, as a plain object for proto-loader to encode.
 * Pure: no I/O, no clock.
 *
 * A denial is always a CheckResponse (never a gRPC error), so Envoy sends the caller
 * exactly this status, these headers and this plain-text body; a gRPC error would become
 * envoy.yaml's status_on_error (504, never a denial status here), which its local reply
 * mapper answers as a plain-text 503.
 */

interface HeaderValueOption {
  header: { key: string; value: string };
  append_action?: 'OVERWRITE_IF_EXISTS_OR_ADD';
}

export interface CheckResponseMessage {
  status: { code: number; message: string };
  denied_response?: { status: { code: number }; headers: HeaderValueOption[]; body: string };
  ok_response?: { headers: HeaderValueOption[]; headers_to_remove: string[] };
  /**
   * google.protobuf.Struct. protobufjs defines the well-known Struct types itself, with
   * camelCase field names (`stringValue`) whatever keepCase says; the wire format is the same.
   */
  dynamic_metadata?: { fields: Record<string, { stringValue: string }> };
}

interface Denial {
  grpcCode: GrpcStatus;
  httpStatus: number;
  body: string;
  headers?: Record<string, string>;
}

/** Edge bodies, plain text (docs/contract.md, "Edge replies"). */
function denialOf(decision: Exclude<Decision, { outcome: 'allowed' }>): Denial {
  switch (decision.outcome) {
    case 'unknown_agent':
      return { grpcCode: GrpcStatus.NOT_FOUND, httpStatus: 404, body: 'no agent at this address\n' };
    case 'caller_rate_limited':
    case 'agent_rate_limited':
      return {
        grpcCode: GrpcStatus.RESOURCE_EXHAUSTED,
        httpStatus: 429,
        body: 'rate limit exceeded\n',
        headers: { 'retry-after': String(decision.retryAfterSeconds) },
      };
    case 'invalid_key':
      return {
        grpcCode: GrpcStatus.UNAUTHENTICATED,
        httpStatus: 401,
        body: 'missing or invalid access key\n',
        headers: { 'www-authenticate': 'Bearer' },
      };
    case 'no_replica':
      return { grpcCode: GrpcStatus.UNAVAILABLE, httpStatus: 503, body: 'no running replica\n' };
    case 'wake_refused':
      return { grpcCode: GrpcStatus.UNAVAILABLE, httpStatus: 503, body: decision.body };
    case 'wake_timeout':
      return {
        grpcCode: GrpcStatus.UNAVAILABLE,
        httpStatus: 503,
        body: 'service unavailable: the agent is starting, retry shortly\n',
        headers: { 'retry-after': String(decision.retryAfterSeconds) },
      };
    case 'unavailable':
      return { grpcCode: GrpcStatus.UNAVAILABLE, httpStatus: 503, body: 'service unavailable: the edge cannot check requests right now\n' };
    // Not a denial but an answer the edge gives itself: a DeniedHttpResponse is Envoy's one way
    // to send a body of authz's choosing instead of reaching the upstream. Any non-OK gRPC
    // status without error_response is CheckStatus::Denied, and denied_response.status.code,
    // when > 0, becomes the reply's code as it is, 200 included (envoy source/extensions/
    // filters/common/ext_authz/ext_authz_grpc_impl.cc, GrpcClientImpl::onSuccess); the filter
    // then calls sendLocalReply(status_code, body, headers) (source/extensions/filters/http/
    // ext_authz/ext_authz.cc, Filter::onComplete, CheckStatus::Denied). 200 is a defined value
    // of envoy/type/v3/http_status.proto's StatusCode (OK = 200), which HttpStatus.code requires.
    case 'acme_challenge':
      return { grpcCode: GrpcStatus.PERMISSION_DENIED, httpStatus: 200, body: decision.keyAuthorization };
    case 'unknown_challenge':
      return { grpcCode: GrpcStatus.NOT_FOUND, httpStatus: 404, body: 'no ACME challenge at this address\n' };
    case 'overloaded':
      return {
        grpcCode: GrpcStatus.UNAVAILABLE,
        httpStatus: 503,
        body: 'service unavailable: the edge is overloaded, retry shortly\n',
        headers: { 'retry-after': String(decision.retryAfterSeconds) },
      };
  }
}

/**
 * `trace`: the edge's trace context for an allowed request (contract/edge-trace.ts). The
 * replica gets it as its `traceparent`, in place of the caller's, so its spans hang under
 * the edge's; the access log gets it as metadata, to make the edge's span from.
 */
export function buildCheckResponse(decision: Decision, trace?: EdgeTraceContext): CheckResponseMessage {
  if (decision.outcome === 'allowed') {
    const headers: HeaderValueOption[] = [
      // Overwrite, never append: a client-sent x-agent-id must not survive next to ours.
      { header: { key: 'x-agent-id', value: decision.agentId }, append_action: 'OVERWRITE_IF_EXISTS_OR_ADD' },
    ];
    if (trace) headers.push({ header: { key: 'traceparent', value: formatTraceParent(trace) }, append_action: 'OVERWRITE_IF_EXISTS_OR_ADD' });
    return {
      status: { code: GrpcStatus.OK, message: '' },
      ok_response: {
        headers,
        // An agent never sees its access key.
        headers_to_remove: ['authorization'],
      },
      // upstream: read by the ORIGINAL_DST cluster (metadata_key envoy.filters.http.ext_authz / upstream).
      // agent_id: comes back in each access-log entry's metadata (authz/access-log-entry.ts), so
      // the request's figures go to the agent authz chose, whatever the caller sent.
      dynamic_metadata: {
        fields: {
          upstream: { stringValue: decision.upstream },
          [AGENT_ID_METADATA_KEY]: { stringValue: decision.agentId },
          // Which version answered, for the request figures that judge a canary (access-log-entry.ts).
          [VERSION_METADATA_KEY]: { stringValue: decision.version },
          ...(trace && {
            [TRACE_METADATA_KEYS.traceId]: { stringValue: trace.traceId },
            [TRACE_METADATA_KEYS.spanId]: { stringValue: trace.spanId },
            [TRACE_METADATA_KEYS.parentSpanId]: { stringValue: trace.parentSpanId ?? '' },
          }),
        },
      },
    };
  }
  const denial = denialOf(decision);
  const headers = { 'content-type': 'text/plain', ...denial.headers };
  return {
    status: { code: denial.grpcCode, message: decision.outcome },
    denied_response: {
      status: { code: denial.httpStatus },
      // No `append`: Envoy would otherwise add to, rather than set, these headers.
      headers: Object.entries(headers).map(([key, value]) => ({ header: { key, value } })),
      body: denial.body,
    },
  };
}
