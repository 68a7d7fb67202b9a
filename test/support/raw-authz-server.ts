import { once } from 'node:events';
import { createServer, type Http2Server, type Http2Session, type OutgoingHttpHeaders, type ServerHttp2Stream } from 'node:http2';
import type { AddressInfo } from 'node:net';
import { frameMessage } from '../../proto/grpc-wire.js';
import { EXTERNAL_AUTH_PROTO, loadEnvoyRoot } from '../../proto/load.js';

/**
 * An Authorization server on raw node:http2 whose every answer a test writes by hand:
 * the right one, or one broken in a chosen way (a wrong status, bad framing, nothing at
 * all). It records the calls' headers and decoded CheckRequests.
 */
export interface RawAuthzServer {
  address: string;
  port: number;
  calls: { headers: Record<string, string | string[] | undefined>; request: Record<string, unknown> | null }[];
  /** Answers the next calls; default: `answerAllowed` to a replica at 127.0.0.1:9. */
  answer: (stream: ServerHttp2Stream) => void;
  /** Every connection accepted so far (a GOAWAY or a reconnect shows here). */
  sessions: Http2Session[];
  close(): Promise<void>;
}

const root = loadEnvoyRoot([EXTERNAL_AUTH_PROTO]);
const CheckRequest = root.lookupType('envoy.service.auth.v3.CheckRequest');
const CheckResponse = root.lookupType('envoy.service.auth.v3.CheckResponse');

/** The bytes of an allowing CheckResponse naming `upstream` (and `agentId`) in dynamic metadata, as authz writes it. */
export function allowedResponse(upstream: string, agentId = 'agt_raw', version?: string): Uint8Array {
  // `version` (stable or canary, issue 36) only when asked for: an answer from an authz before canaries has none.
  const versionField = version === undefined ? {} : { version: { stringValue: version } };
  return CheckResponse.encode({
    status: { code: 0 },
    ok_response: {},
    dynamic_metadata: { fields: { upstream: { stringValue: upstream }, agent_id: { stringValue: agentId }, ...versionField } },
  }).finish();
}

/** A well-formed answer: headers, one Length-Prefixed-Message, trailers with `grpc-status`. */
export function answerWith(stream: ServerHttp2Stream, message: Uint8Array, grpcStatus = '0'): void {
  answerRaw(stream, { body: frameMessage(message), trailers: { 'grpc-status': grpcStatus } });
}

const GRPC_HEAD = { ':status': 200, 'content-type': 'application/grpc' };

/** Headers (default: 200, application/grpc), `body` as bytes on the wire, then trailers (default: grpc-status 0). */
function answerRaw(stream: ServerHttp2Stream, { head = GRPC_HEAD, body, trailers = { 'grpc-status': '0' } }: { head?: OutgoingHttpHeaders; body: Uint8Array; trailers?: OutgoingHttpHeaders }): void {
  stream.respond(head, { waitForTrailers: true });
  stream.once('wantTrailers', () => stream.sendTrailers(trailers));
  stream.end(body);
}

export async function startRawAuthzServer(port = 0): Promise<RawAuthzServer> {
  const server: Http2Server = createServer();
  const state: RawAuthzServer = {
    address: '',
    port: 0,
    calls: [],
    answer: (stream) => answerWith(stream, allowedResponse('127.0.0.1:9')),
    sessions: [],
    close: async () => {
      for (const session of state.sessions) session.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  server.on('session', (session) => state.sessions.push(session));
  server.on('stream', (stream, headers) => {
    const chunks: Buffer[] = [];
    stream.on('data', (chunk: Buffer) => chunks.push(chunk));
    stream.on('end', () => {
      const body = Buffer.concat(chunks);
      const request = body.length >= 5 ? (CheckRequest.toObject(CheckRequest.decode(body.subarray(5))) as Record<string, unknown>) : null;
      state.calls.push({ headers: { ...headers }, request });
      state.answer(stream);
    });
    stream.on('error', () => undefined);
  });
  server.listen(port, '127.0.0.1');
  await once(server, 'listening');
  state.port = (server.address() as AddressInfo).port;
  state.address = `127.0.0.1:${state.port}`;
  return state;
}

/**
 * Answers authz must never be taken as an allow, each carrying an allowing message naming
 * `upstream` wherever it can, so a client that read past the fault would forward there.
 */
export const BROKEN_ANSWERS: readonly { name: string; answer(stream: ServerHttp2Stream, upstream: string): void }[] = [
  { name: 'a non-OK grpc-status (UNAVAILABLE) after an allowing message', answer: (stream, upstream) => answerWith(stream, allowedResponse(upstream), '14') },
  {
    name: 'a Trailers-Only response with grpc-status 0: no message at all',
    answer: (stream) => stream.respond({ ':status': 200, 'content-type': 'application/grpc', 'grpc-status': '0' }, { endStream: true }),
  },
  {
    name: 'HTTP 503 with an allowing message',
    answer: (stream, upstream) => answerRaw(stream, { head: { ...GRPC_HEAD, ':status': 503 }, body: frameMessage(allowedResponse(upstream)) }),
  },
  {
    name: 'a content-type that is not gRPC',
    answer: (stream, upstream) => answerRaw(stream, { head: { ...GRPC_HEAD, 'content-type': 'text/html' }, body: frameMessage(allowedResponse(upstream)) }),
  },
  {
    // Envoy's Common::hasGrpcContentType: grpc-web is not gRPC, though it starts like it.
    name: 'content-type application/grpc-web',
    answer: (stream, upstream) => answerRaw(stream, { head: { ...GRPC_HEAD, 'content-type': 'application/grpc-web' }, body: frameMessage(allowedResponse(upstream)) }),
  },
  { name: 'a message that is not a CheckResponse', answer: (stream) => answerWith(stream, Buffer.from([0xff, 0xff, 0xff, 0xff, 0x0f])) },
  {
    name: 'a compressed message, though no encoding was offered',
    answer: (stream, upstream) => {
      const framed = frameMessage(allowedResponse(upstream));
      framed[0] = 1;
      answerRaw(stream, { head: { ...GRPC_HEAD, 'grpc-encoding': 'gzip' }, body: framed });
    },
  },
  {
    name: 'a message cut short before the trailers',
    answer: (stream, upstream) => {
      const framed = frameMessage(allowedResponse(upstream));
      answerRaw(stream, { body: framed.subarray(0, framed.length - 3) });
    },
  },
  {
    name: 'two messages to a unary call',
    answer: (stream, upstream) => {
      const framed = frameMessage(allowedResponse(upstream));
      answerRaw(stream, { body: Buffer.concat([framed, framed]) });
    },
  },
  {
    name: 'trailers without grpc-status',
    answer: (stream, upstream) => answerRaw(stream, { body: frameMessage(allowedResponse(upstream)), trailers: { 'x-other': '1' } }),
  },
  {
    name: 'an allowing message and no trailers',
    answer: (stream, upstream) => {
      stream.respond({ ':status': 200, 'content-type': 'application/grpc', 'grpc-status': '0' });
      stream.end(frameMessage(allowedResponse(upstream)));
    },
  },
  {
    name: 'the stream reset after the headers',
    answer: (stream) => {
      stream.respond({ ':status': 200, 'content-type': 'application/grpc' });
      stream.close(0x2); // INTERNAL_ERROR
    },
  },
];
