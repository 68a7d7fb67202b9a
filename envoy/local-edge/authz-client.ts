import { constants, type ClientHttp2Session, type ClientHttp2Stream, type IncomingHttpHeaders, type IncomingHttpStatusHeader } from 'node:http2';
import type protobuf from 'protobufjs';
import { decodeGrpcMessage, frameMessage, grpcTimeoutHeader, isGrpcContentType, MessageDeframer } from '../../proto/grpc-wire.js';
import { EXTERNAL_AUTH_PROTO, loadEnvoyRoot } from '../../proto/load.js';
import { isUnixSocket, parseGrpcTarget } from '../../contract/grpc-target.js';
import type { buildCheckRequest } from './check-request.js';
import type { CheckResponse } from './authz-answer.js';
import { Http2Channel } from './http2-channel.js';

export type CheckRequestMessage = ReturnType<typeof buildCheckRequest>;

export interface AuthzClient {
  /** Rejects on any gRPC error, including the deadline: the caller fails closed. */
  check(request: CheckRequestMessage, deadlineMs: number): Promise<CheckResponse>;
  close(): void;
}

/** The method's path: PROTOCOL-HTTP2.md, "Path" → "/" Service-Name "/" {method name}. */
const CHECK_PATH = '/envoy.service.auth.v3.Authorization/Check';

/**
 * A gRPC client of envoy.service.auth.v3.Authorization's unary Check at `address`
 * (unix:/path of authz's socket, or host:port; plaintext HTTP/2), written to grpc/grpc's doc/PROTOCOL-HTTP2.md over one
 * node:http2 connection (Http2Channel). grpc-js's client did the same with a resolver,
 * a load balancer, call credentials, interceptors and filters on every call: a third of
 * the local edge's CPU. Every call is a Check; no decision is ever cached.
 */
export function createAuthzClient(address: string): AuthzClient {
  const target = parseGrpcTarget(address);
  if ('problem' in target) throw new Error(`authz's address: ${target.problem}`);
  const channel = new Http2Channel(target);
  // gRPC's authority for a Unix socket is "localhost" (grpc-js, resolver-uds.ts, getDefaultAuthority).
  const authority = isUnixSocket(target) ? 'localhost' : address;
  const { request: requestType, response: responseType } = checkTypes();
  const headersByDeadline = new Map<number, Record<string, string>>();
  const headersFor = (deadlineMs: number) => {
    let headers = headersByDeadline.get(deadlineMs);
    if (headers === undefined) {
      // PROTOCOL-HTTP2.md, "Requests": Call-Definition; the deadline as Timeout.
      headers = { ':method': 'POST', ':scheme': 'http', ':authority': authority, ':path': CHECK_PATH, te: 'trailers', 'content-type': 'application/grpc', 'grpc-timeout': grpcTimeoutHeader(deadlineMs) };
      if (headersByDeadline.size < 16) headersByDeadline.set(deadlineMs, headers);
    }
    return headers;
  };

  return {
    check: (request, deadlineMs) =>
      new Promise<CheckResponse>((resolve, reject) => {
        const message = frameMessage(requestType.encode(request).finish());
        let session: ClientHttp2Session;
        let stream: ClientHttp2Stream;
        try {
          session = channel.session();
          stream = session.request(headersFor(deadlineMs), { endStream: false });
        } catch (error) {
          reject(error as Error);
          return;
        }
        let settled = false;
        const fail = (reason: string) => {
          if (settled) return;
          settled = true;
          clearTimeout(deadline);
          if (!stream.closed) stream.close(constants.NGHTTP2_CANCEL);
          reject(new Error(`authz Check failed: ${reason}`));
        };
        // PROTOCOL-HTTP2.md, "Client Cancellation": the deadline passing cancels the call.
        const deadline = setTimeout(() => {
          fail(`deadline of ${deadlineMs} ms exceeded`);
          channel.probe(session);
        }, deadlineMs);

        let head: (IncomingHttpHeaders & IncomingHttpStatusHeader) | undefined;
        let trailers: IncomingHttpHeaders | undefined;
        const deframer = new MessageDeframer();
        const messages: Buffer[] = [];
        stream.on('response', (headers) => (head = headers));
        stream.on('trailers', (headers) => (trailers = headers));
        stream.on('data', (chunk: Buffer) => {
          try {
            for (const message of deframer.push(chunk)) messages.push(message);
          } catch (error) {
            fail((error as Error).message); // compressed, or past the size limit
          }
        });
        stream.on('error', () => undefined); // 'close' follows and decides
        stream.on('close', () => {
          if (settled) return;
          const outcome = deframer.midMessage ? 'the stream ended inside a message' : outcomeOf(head, trailers, messages, responseType);
          if (typeof outcome === 'string') return fail(outcome);
          settled = true;
          clearTimeout(deadline);
          resolve(outcome);
        });
        stream.end(message);
      }),
    close: () => channel.close(),
  };
}

/** The call's result from what arrived: the CheckResponse, or why there is none. */
function outcomeOf(
  head: (IncomingHttpHeaders & IncomingHttpStatusHeader) | undefined,
  trailers: IncomingHttpHeaders | undefined,
  messages: Buffer[],
  responseType: protobuf.Type,
): CheckResponse | string {
  if (head === undefined) return 'the stream closed before a response';
  // PROTOCOL-HTTP2.md, "Responses": a non-200 or non-gRPC answer is an error whatever else it says.
  if (head[':status'] !== 200) return `HTTP status ${head[':status']}`;
  if (!isGrpcContentType(head['content-type'])) return `content-type ${head['content-type']}`;
  // Status in Trailers, or in the one HEADERS frame of a Trailers-Only response (which carries no message).
  if (trailers === undefined && messages.length > 0) return 'a message without trailers';
  const status = (trailers ?? head)['grpc-status'];
  if (status === undefined) return 'no grpc-status';
  if (status !== '0') return `grpc-status ${status} ${decodeGrpcMessage(String((trailers ?? head)['grpc-message'] ?? ''))}`;
  // A unary response: exactly one message.
  if (messages.length !== 1) return `${messages.length} response messages`;
  try {
    return responseType.decode(messages[0]!) as unknown as CheckResponse;
  } catch (error) {
    return `malformed CheckResponse: ${(error as Error).message}`;
  }
}

let types: { request: protobuf.Type; response: protobuf.Type } | undefined;

/** CheckRequest and CheckResponse from Envoy's protos, loaded once (keepCase, as proto-loader loads them). */
function checkTypes() {
  if (types) return types;
  const root = loadEnvoyRoot([EXTERNAL_AUTH_PROTO]);
  types = { request: root.lookupType('envoy.service.auth.v3.CheckRequest'), response: root.lookupType('envoy.service.auth.v3.CheckResponse') };
  return types;
}
