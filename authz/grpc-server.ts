import { EventEmitter } from 'node:events';
import http2, { type Http2Server, type Http2Session, type IncomingHttpHeaders, type ServerHttp2Stream } from 'node:http2';
import type { AddressInfo } from 'node:net';
import { encodeGrpcMessage, frameMessage, FramingError, GrpcStatus, isGrpcContentType, MessageDeframer } from '../proto/grpc-wire.js';

/**
 * The gRPC server authz answers Envoy with: unary and client-streaming calls straight on
 * node:http2, following grpc/grpc doc/PROTOCOL-HTTP2.md. A no-op Check costs 38.5–44 µs
 * of CPU on it against 52–55.5 on grpc-js's server (bench/authz-cpu.ts, docs/edge.md),
 * and every allowed request to every agent makes one Check. What it leaves out, on
 * purpose: compression (Envoy and the local edge never compress; a call that does gets
 * UNIMPLEMENTED or INTERNAL), server streaming (no method here has it), and a timer per
 * call for grpc-timeout: the caller
 * cancels at its deadline (a RST_STREAM, seen here as the stream closing) and every
 * handler here ends within its own bound anyway (AUTHZ_REDIS_TIMEOUT_MS, WAKE_TIMEOUT_SECONDS).
 */

/** A method as proto-loader and grpc-js define one; the same definitions serve both. */
export interface GrpcMethodDefinition {
  path: string;
  requestStream: boolean;
  responseStream: boolean;
  requestDeserialize(bytes: Buffer): unknown;
  responseSerialize(value: never): Buffer;
}

export interface GrpcError {
  code: GrpcStatus;
  details: string;
}

export type GrpcCallback<Response> = (error: GrpcError | null, response?: Response) => void;

export interface UnaryCall<Request> {
  request: Request;
}

/**
 * A client-streaming call's messages: 'data' with each decoded message, then either 'end'
 * or 'cancelled', once. 'end': the client sent its last message (node:http2 also ends the
 * readable side of a stream the client reset, and tells of the reset only later, so a
 * cancelled call may end this way: its answer then goes nowhere). 'cancelled': the stream
 * closed or broke before that.
 */
export interface ClientStreamCall<Request> extends EventEmitter {
  on(event: 'data', listener: (message: Request) => void): this;
  on(event: 'end' | 'cancelled', listener: () => void): this;
}

export type UnaryHandler<Request = never, Response = never> = (call: UnaryCall<Request>, callback: GrpcCallback<Response>) => void;
export type ClientStreamHandler<Request = never, Response = never> = (call: ClientStreamCall<Request>, callback: GrpcCallback<Response>) => void;
/** Handlers by method name, each typed by its own messages (any handler of two arguments fits `never`). */
export type ServiceImplementation = Readonly<Record<string, (call: never, callback: never) => void>>;

interface Method {
  definition: GrpcMethodDefinition;
  unary?: UnaryHandler<unknown, unknown>;
  clientStream?: ClientStreamHandler<unknown, unknown>;
}

export interface GrpcServer {
  /** Serves each method of `service` that `implementation` names; the rest answer UNIMPLEMENTED. */
  addService(service: Readonly<Record<string, GrpcMethodDefinition>>, implementation: ServiceImplementation): void;
  /** Resolves with the bound port (0 picks a free one). */
  listen(host: string, port: number): Promise<number>;
  /**
   * Stops accepting, lets open calls finish (GOAWAY), resolves when every connection has
   * closed, or after `graceMs`, when the connections still open are dropped: a peer that
   * never closes its side of a stream would otherwise hold the shutdown for ever.
   */
  shutdown(graceMs?: number): Promise<void>;
  /** Drops every connection at once. */
  forceShutdown(): void;
}

// Constant heads, shared by every call: node:http2 copies them into its own header list.
const RESPONSE_HEADERS = Object.freeze({ ':status': 200, 'content-type': 'application/grpc+proto' });
const OK_TRAILERS = Object.freeze({ 'grpc-status': '0' });
const ignore = () => undefined;

export function createGrpcServer(): GrpcServer {
  const methods = new Map<string, Method>();
  const sessions = new Set<Http2Session>();
  // grpc-js's server settings (server.ts, Server constructor): node's default session
  // memory limit makes it refuse streams under load, so grpc-js turns the check off.
  const server: Http2Server = http2.createServer({ maxSessionMemory: Number.MAX_SAFE_INTEGER, maxSendHeaderBlockLength: Number.MAX_SAFE_INTEGER });

  server.on('session', (session) => {
    sessions.add(session);
    session.on('close', () => sessions.delete(session));
    session.on('error', ignore);
  });
  server.on('stream', (stream, headers) => serveCall(methods, stream, headers));
  const dropAll = () => {
    for (const session of sessions) session.destroy();
  };

  return {
    addService(service, implementation) {
      for (const [name, definition] of Object.entries(service)) {
        const handler = implementation[name];
        if (!handler) continue;
        if (definition.responseStream) throw new Error(`${definition.path}: server-streaming methods are not supported`);
        const method: Method = { definition };
        if (definition.requestStream) method.clientStream = handler as unknown as ClientStreamHandler<unknown, unknown>;
        else method.unary = handler as unknown as UnaryHandler<unknown, unknown>;
        methods.set(definition.path, method);
      }
    },
    listen(host, port) {
      return new Promise((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, host, () => {
          server.off('error', reject);
          resolve((server.address() as AddressInfo).port);
        });
      });
    },
    shutdown(graceMs = Infinity) {
      return new Promise((resolve) => {
        if (!server.listening) return resolve();
        const late = Number.isFinite(graceMs) ? setTimeout(dropAll, graceMs) : undefined;
        server.close(() => {
          clearTimeout(late);
          resolve();
        });
        for (const session of sessions) session.close();
      });
    },
    forceShutdown() {
      server.close();
      dropAll();
    },
  };
}

function serveCall(methods: ReadonlyMap<string, Method>, stream: ServerHttp2Stream, headers: IncomingHttpHeaders): void {
  // A reset stream emits 'error'; the call is simply over (its 'close' says so).
  stream.on('error', ignore);
  const contentType = headers['content-type'];
  // "If Content-Type does not begin with application/grpc, gRPC servers SHOULD respond with
  // HTTP status 415" (PROTOCOL-HTTP2.md), grpc-web included, as Envoy reads it.
  if (!isGrpcContentType(contentType)) {
    stream.respond({ ':status': 415 }, { endStream: true });
    return;
  }
  const method = methods.get(headers[':path'] ?? '');
  if (!method) return endWithStatus(stream, GrpcStatus.UNIMPLEMENTED, `unknown method ${headers[':path']}`);
  const encoding = headers['grpc-encoding'];
  if (encoding !== undefined && encoding !== 'identity') {
    return endWithStatus(stream, GrpcStatus.UNIMPLEMENTED, `message encoding ${encoding} is not supported`);
  }
  if (method.unary) serveUnary(stream, method.definition, method.unary);
  else serveClientStream(stream, method.definition, method.clientStream!);
}

function serveUnary(stream: ServerHttp2Stream, definition: GrpcMethodDefinition, handler: UnaryHandler<unknown, unknown>): void {
  const deframer = new MessageDeframer();
  let request: Buffer | undefined;
  let failed = false;
  stream.on('data', (chunk: Buffer) => {
    if (failed) return;
    try {
      for (const message of deframer.push(chunk)) {
        if (request) throw new FramingError(GrpcStatus.UNIMPLEMENTED, 'a unary call takes one request message');
        request = message;
      }
    } catch (error) {
      failed = true;
      endWithStatus(stream, (error as FramingError).code, (error as FramingError).message);
    }
  });
  stream.on('end', () => {
    if (failed) return;
    if (!request || deframer.midMessage) return endWithStatus(stream, GrpcStatus.INTERNAL, 'a unary call takes one whole request message');
    let decoded: unknown;
    try {
      decoded = definition.requestDeserialize(request);
    } catch {
      return endWithStatus(stream, GrpcStatus.INTERNAL, 'cannot decode the request message');
    }
    handler({ request: decoded }, (error, response) => answer(stream, definition, error, response));
  });
}

function serveClientStream(stream: ServerHttp2Stream, definition: GrpcMethodDefinition, handler: ClientStreamHandler<unknown, unknown>): void {
  const deframer = new MessageDeframer();
  const call = new EventEmitter() as ClientStreamCall<unknown>;
  let over = false;
  const fail = (code: GrpcStatus, details: string) => {
    over = true;
    endWithStatus(stream, code, details);
    call.emit('cancelled');
  };
  handler(call, (error, response) => {
    over = true;
    answer(stream, definition, error, response);
  });
  stream.on('data', (chunk: Buffer) => {
    if (over) return;
    let messages: Buffer[];
    try {
      messages = deframer.push(chunk);
    } catch (error) {
      return fail((error as FramingError).code, (error as FramingError).message);
    }
    for (const message of messages) {
      let decoded: unknown;
      try {
        decoded = definition.requestDeserialize(message);
      } catch {
        return fail(GrpcStatus.INTERNAL, 'cannot decode a request message');
      }
      call.emit('data', decoded);
    }
  });
  stream.on('end', () => {
    if (over) return;
    if (deframer.midMessage) return fail(GrpcStatus.INTERNAL, 'the call ended partway through a message');
    call.emit('end');
  });
  stream.on('close', () => {
    if (over) return;
    over = true;
    call.emit('cancelled');
  });
}

function answer(stream: ServerHttp2Stream, definition: GrpcMethodDefinition, error: GrpcError | null, response: unknown): void {
  // The caller cancelled or its deadline passed: nobody is listening.
  if (stream.destroyed || stream.closed) return;
  if (error) return endWithStatus(stream, error.code, error.details);
  let bytes: Buffer;
  try {
    bytes = definition.responseSerialize(response as never);
  } catch {
    return endWithStatus(stream, GrpcStatus.INTERNAL, 'cannot encode the response message');
  }
  // "Status must be sent in Trailers even if the status code is OK."
  stream.respond(RESPONSE_HEADERS, { waitForTrailers: true });
  stream.once('wantTrailers', () => stream.sendTrailers(OK_TRAILERS));
  stream.end(frameMessage(bytes));
}

/**
 * Trailers-Only: the status in the one HEADERS frame. Sent before the client's END_STREAM
 * (a framing error), it is followed by RST_STREAM(NO_ERROR) "to allow the stream to be
 * deallocated" (PROTOCOL-HTTP2.md, Early Server Closure); node sends it once the headers are out.
 */
function endWithStatus(stream: ServerHttp2Stream, code: GrpcStatus, details: string): void {
  if (stream.destroyed || stream.closed) return;
  if (stream.headersSent) {
    stream.close(http2.constants.NGHTTP2_INTERNAL_ERROR);
    return;
  }
  stream.respond(
    { ':status': 200, 'content-type': 'application/grpc+proto', 'grpc-status': String(code), 'grpc-message': encodeGrpcMessage(details) },
    { endStream: true },
  );
  if (!stream.readableEnded) stream.close(http2.constants.NGHTTP2_NO_ERROR);
}
