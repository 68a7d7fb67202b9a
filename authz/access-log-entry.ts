import { isTracedPath, TRACE_METADATA_KEYS, type EdgeSpan } from '../contract/edge-trace.js';
import { isCanaryVersion } from '../contract/request-figures.js';

/**
 * Which of Envoy's access-log entries are requests an agent answered, and their figures.
 * Pure: the access-log service feeds what this returns to the request-figure recorder.
 *
 * Fields as Envoy fills them (envoyproxy/envoy
 * source/extensions/access_loggers/grpc/grpc_access_log_utils.cc,
 * `Utility::extractCommonAccessLogProperties`; http_grpc_access_log_impl.cc, `emitLog`):
 * - `common_properties.metadata` is the stream's whole dynamic metadata, so it holds what
 *   authz's OK answer put under `envoy.filters.http.ext_authz` (ext_authz.cc,
 *   `Filter::onComplete`, setDynamicMetadata). A denial carries none: authz sets metadata
 *   on allowed requests only (check-response.ts).
 * - the `time_to_*_upstream_*` durations (from the stream's start) are set only for what
 *   really happened upstream: `time_to_first_upstream_rx_byte` only once the replica sent a
 *   byte back. A connect failure, reset or no host (UF, URX, UC/UR, UH: Envoy's own 502/503)
 *   has none, so is not the agent's answer.
 * - `response.response_code` is the status the caller got.
 */

/** google.protobuf.Duration and Timestamp as proto-loader decodes them (longs as strings). */
interface Duration {
  seconds?: string | number;
  nanos?: number;
}

/** The parts of envoy.data.accesslog.v3.HTTPAccessLogEntry read here, as proto-loader decodes them. */
export interface HttpAccessLogEntry {
  common_properties?: {
    start_time?: Duration | null;
    time_to_last_downstream_tx_byte?: Duration | null;
    time_to_first_upstream_tx_byte?: Duration | null;
    time_to_first_upstream_rx_byte?: Duration | null;
    time_to_last_upstream_rx_byte?: Duration | null;
    /** google.protobuf.Struct values: protobufjs names their fields in camelCase whatever keepCase says. */
    metadata?: { filter_metadata?: Record<string, { fields?: Record<string, { stringValue?: string }> }> } | null;
    intermediate_log_entry?: boolean;
  } | null;
  /** HTTPRequestProperties: Envoy fills method, path and request id for every entry (http_grpc_access_log_impl.cc, `emitLog`). */
  request?: { request_method?: string | number; path?: string; request_id?: string } | null;
  response?: { response_code?: { value?: number } | null } | null;
}

export interface ForwardedRequest {
  agentId: string;
  status: number;
  upstreamMs: number;
  /** Whether authz routed it to the agent's canary (its `version` metadata is exactly `canary`). */
  canary: boolean;
}

export const EXT_AUTHZ_METADATA_NAMESPACE = 'envoy.filters.http.ext_authz';
export const AGENT_ID_METADATA_KEY = 'agent_id';
/**
 * The version of the agent authz routed to, `stable` or `canary`. Entries without it (from
 * an authz before canaries) are the stable version's (isCanaryVersion).
 */
export const VERSION_METADATA_KEY = 'version';

/** Agent ids as the control API makes them; anything else cannot name a figures key. */
const AGENT_ID = /^[A-Za-z0-9_-]{1,64}$/;

/** The request's figures when an agent answered it, else undefined (denied, failed before the replica, or not ours). */
export function forwardedRequestOf(entry: HttpAccessLogEntry): ForwardedRequest | undefined {
  const common = entry.common_properties;
  // Periodic entries of a stream still open (flush_access_log_on_new_request, access_log_flush_interval):
  // its final entry counts it.
  if (!common || common.intermediate_log_entry) return undefined;
  const authzFields = common.metadata?.filter_metadata?.[EXT_AUTHZ_METADATA_NAMESPACE]?.fields;
  const agentId = authzFields?.[AGENT_ID_METADATA_KEY]?.stringValue;
  if (!agentId || !AGENT_ID.test(agentId)) return undefined;
  const firstRx = millisecondsOf(common.time_to_first_upstream_rx_byte);
  const firstTx = millisecondsOf(common.time_to_first_upstream_tx_byte);
  const status = entry.response?.response_code?.value;
  if (firstRx === undefined || firstTx === undefined || !status) return undefined;
  // Upstream time: from the first byte sent to the replica to the last byte it sent back,
  // what the caller waits on the agent for, a streamed answer included, without authz's
  // Check or the caller's upload before it. A response cut short has no last byte: up to its first.
  const lastRx = millisecondsOf(common.time_to_last_upstream_rx_byte) ?? firstRx;
  const canary = isCanaryVersion(authzFields?.[VERSION_METADATA_KEY]?.stringValue);
  return { agentId, status, upstreamMs: Math.max(0, lastRx - firstTx), canary };
}

function millisecondsOf(duration: Duration | null | undefined): number | undefined {
  if (!duration) return undefined;
  return Number(duration.seconds ?? 0) * 1000 + (duration.nanos ?? 0) / 1e6;
}

/**
 * The edge's span of an invoke (contract/edge-trace.ts), from its final entry: the trace
 * context authz chose, from the request's start to the answer's last byte out. Only for
 * the path the runtime traces, and only when authz allowed it with a trace context;
 * whatever the replica did (a 502 of Envoy's own is the span's error).
 */
export function edgeSpanOf(entry: HttpAccessLogEntry): EdgeSpan | undefined {
  const common = entry.common_properties;
  if (!common || common.intermediate_log_entry) return undefined;
  const path = entry.request?.path ?? '';
  if (!isTracedPath(path)) return undefined;
  const fields = common.metadata?.filter_metadata?.[EXT_AUTHZ_METADATA_NAMESPACE]?.fields;
  const agentId = fields?.[AGENT_ID_METADATA_KEY]?.stringValue;
  const traceId = fields?.[TRACE_METADATA_KEYS.traceId]?.stringValue;
  const spanId = fields?.[TRACE_METADATA_KEYS.spanId]?.stringValue;
  const startMs = millisecondsOf(common.start_time);
  if (!agentId || !AGENT_ID.test(agentId) || !traceId || !spanId || startMs === undefined) return undefined;
  const durationMs = millisecondsOf(common.time_to_last_downstream_tx_byte) ?? millisecondsOf(common.time_to_last_upstream_rx_byte) ?? 0;
  return {
    agentId,
    traceId,
    spanId,
    parentSpanId: fields?.[TRACE_METADATA_KEYS.parentSpanId]?.stringValue || null,
    startMs,
    durationMs,
    method: String(entry.request?.request_method ?? ''),
    path: path.split('?')[0]!,
    status: entry.response?.response_code?.value ?? 0,
    requestId: entry.request?.request_id ?? '',
    canary: isCanaryVersion(fields?.[VERSION_METADATA_KEY]?.stringValue),
  };
}
