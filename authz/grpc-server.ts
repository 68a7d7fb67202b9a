import { EventEmitter } from 'node:events';
import net, { type AddressInfo } from 'node:net';
import { encodeGrpcMessage, frameMessage, FramingError, GrpcStatus, isGrpcContentType, MessageDeframer } from '../proto/grpc-wire.js';
import { Http2Connection, type ServerStream } from './http2/connection.js';
import { encodeHeaderBlock } from './http2/hpack.js';

/**
 * The gRPC server authz answers Envoy with: unary and client-streaming calls, following
 * grpc/grpc doc/PROTOCOL-HTTP2.md, on an HTTP/2 server of its own (authz/http2/). On
 * node:http2 a no-op Check cost 25-31 µs of CPU and every stream left a graph of objects
 * that only a full GC collects, which paused authz 50-115 ms every few seconds under load
 * (docs/edge.md); here it costs a few µs and leaves next to nothing. What it leaves out, on
 * purpose: compression (Envoy and the local edge never compress; a call that does gets
 * UNIMPLEMENTED or INTERNAL), server streaming (no method here has it), and a timer per
 * call for grpc-timeout: the caller cancels at its deadline (a RST_STREAM, seen here as
 * the stream closing) and every handler here ends within its own bound anyway
 * (AUTHZ_REDIS_TIMEOUT_MS, WAKE_TIMEOUT_SECONDS).
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
 * or 'cancelled', once. 'end': the client sent its last message. 'cancelled': the client
 * reset the stream, or the connection broke, before that.
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

// Constant answers, encoded once: literals without indexing stand alone (authz/http2/hpack.ts).
const RESPONSE_HEAD = encodeHeaderBlock([[':status', '200'], ['content-type', 'application/grpc+proto']]);
const OK_TRAILERS = encodeHeaderBlock([['grpc-status', '0']]);
const NOT_GRPC = encodeHeaderBlock([[':status', '415']]);

export function createGrpcServer(): GrpcServer {
  const methods = new Map<string, Method>();
  const connections = new Set<Http2Connection>();
  const server = net.createServer({ noDelay: true }, (socket) => {
    const connection = new Http2Connection(socket, (stream) => serveCall(methods, stream));
    connections.add(connection);
    connection.onclose = () => connections.delete(connection);
  });
  const dropAll = () => {
    for (const connection of connections) connection.destroy();
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
        for (const connection of connections) connection.goAway();
      });
    },
    forceShutdown() {
      server.close();
      dropAll();
    },
  };
}

function serveCall(methods: ReadonlyMap<string, Method>, stream: ServerStream): void {
  const { headers } = stream;
  // "If Content-Type does not begin with application/grpc, gRPC servers SHOULD respond with
  // HTTP status 415" (PROTOCOL-HTTP2.md), grpc-web included, as Envoy reads it.
  if (!isGrpcContentType(headers['content-type'])) return stream.respond(NOT_GRPC);
  const method = methods.get(headers[':path'] ?? '');
  if (!method) return endWithStatus(stream, GrpcStatus.UNIMPLEMENTED, `unknown method ${headers[':path']}`);
  const encoding = headers['grpc-encoding'];
  if (encoding !== undefined && encoding !== 'identity') {
    return endWithStatus(stream, GrpcStatus.UNIMPLEMENTED, `message encoding ${encoding} is not supported`);
  }
  if (method.unary) serveUnary(stream, method.definition, method.unary);
  else serveClientStream(stream, method.definition, method.clientStream!);
}

function serveUnary(stream: ServerStream, definition: GrpcMethodDefinition, handler: UnaryHandler<unknown, unknown>): void {
  const deframer = new MessageDeframer();
  let request: Buffer | undefined;
  let failed = false;
  stream.ondata = (chunk) => {
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
  };
  stream.onend = () => {
    if (failed) return;
    if (!request || deframer.midMessage) return endWithStatus(stream, GrpcStatus.INTERNAL, 'a unary call takes one whole request message');
    let decoded: unknown;
    try {
      decoded = definition.requestDeserialize(request);
    } catch {
      return endWithStatus(stream, GrpcStatus.INTERNAL, 'cannot decode the request message');
    }
    handler({ request: decoded }, (error, response) => answer(stream, definition, error, response));
  };
}

function serveClientStream(stream: ServerStream, definition: GrpcMethodDefinition, handler: ClientStreamHandler<unknown, unknown>): void {
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
  stream.ondata = (chunk) => {
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
  };
  stream.onend = () => {
    if (over) return;
    if (deframer.midMessage) return fail(GrpcStatus.INTERNAL, 'the call ended partway through a message');
    call.emit('end');
  };
  stream.onclose = () => {
    if (over) return;
    over = true;
    call.emit('cancelled');
  };
}

function answer(stream: ServerStream, definition: GrpcMethodDefinition, error: GrpcError | null, response: unknown): void {
  // The caller cancelled or its deadline passed: nobody is listening.
  if (stream.closed) return;
  if (error) return endWithStatus(stream, error.code, error.details);
  let bytes: Buffer;
  try {
    bytes = definition.responseSerialize(response as never);
  } catch {
    return endWithStatus(stream, GrpcStatus.INTERNAL, 'cannot encode the response message');
  }
  // "Status must be sent in Trailers even if the status code is OK."
  stream.respond(RESPONSE_HEAD, frameMessage(bytes), OK_TRAILERS);
}

/**
 * Trailers-Only: the status in the one HEADERS frame. Sent before the client's END_STREAM
 * (a framing error), the connection follows it with RST_STREAM(NO_ERROR) "to allow the
 * stream to be deallocated" (PROTOCOL-HTTP2.md, Early Server Closure).
 */
function endWithStatus(stream: ServerStream, code: GrpcStatus, details: string): void {
  if (stream.closed) return;
  stream.respond(
    encodeHeaderBlock([
      [':status', '200'],
      ['content-type', 'application/grpc+proto'],
      ['grpc-status', String(code)],
      ['grpc-message', encodeGrpcMessage(details)],
    ]),
  );
}
