import type { RequestFigureSink } from '../contract/request-figure-recorder.js';
import type { ClientStreamCall, GrpcCallback, ServiceImplementation } from './grpc-server.js';
import type { EdgeSpanSink } from '../contract/edge-trace.js';
import { edgeSpanOf, forwardedRequestOf, type HttpAccessLogEntry } from './access-log-entry.js';

/**
 * envoy.service.accesslog.v3.StreamAccessLogsMessage as proto-loader decodes it. Envoy
 * sends the identifier (node, log_name) on a stream's first message only, then batches
 * (envoyproxy/envoy source/extensions/access_loggers/common/grpc_access_logger.h,
 * `GrpcAccessLogger::flush`: initMessage only while the stream is not started); nothing
 * here depends on it.
 */
interface StreamAccessLogsMessage {
  http_logs?: { log_entry?: HttpAccessLogEntry[] } | null;
}

type AccessLogCall = ClientStreamCall<StreamAccessLogsMessage>;

export interface AccessLogService {
  /** For `server.addService(loadAccessLogService().service, implementation)`. */
  implementation: ServiceImplementation;
  /**
   * Answers every open stream. Envoy never ends its streams, and a gRPC server's graceful
   * shutdown waits for open calls; Envoy opens a new stream on its next flush.
   */
  endStreams(): void;
}

/**
 * The access-log service Envoy's http_grpc logger streams to (envoy.yaml, access_log):
 * every entry of a request an agent answered goes to `sink`; the rest (denials, Envoy's
 * own failures, TCP entries) are dropped. An invoke's entry also makes the edge's span,
 * for `spans`. Nothing is stored per entry.
 */
export function createAccessLogService(sink: RequestFigureSink, spans?: EdgeSpanSink): AccessLogService {
  const open = new Map<AccessLogCall, GrpcCallback<object>>();
  const finish = (call: AccessLogCall) => {
    const callback = open.get(call);
    if (!open.delete(call)) return;
    callback!(null, {});
  };

  return {
    implementation: {
      StreamAccessLogs(call: AccessLogCall, callback: GrpcCallback<object>) {
        open.set(call, callback);
        call.on('data', (message: StreamAccessLogsMessage) => {
          for (const entry of message.http_logs?.log_entry ?? []) {
            const request = forwardedRequestOf(entry);
            if (request) sink.record(request.agentId, request.status, request.upstreamMs, request.canary);
            if (spans) {
              const span = edgeSpanOf(entry);
              if (span) spans.record(span);
            }
          }
        });
        call.on('end', () => finish(call));
        // The client went away (Envoy restarting): nothing to answer.
        call.on('cancelled', () => open.delete(call));
      },
    },
    endStreams() {
      for (const call of [...open.keys()]) finish(call);
    },
  };
}
