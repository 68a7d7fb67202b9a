import { EventEmitter } from 'node:events';
import net, { type AddressInfo } from 'node:net';
import { encodeGrpcMessage, frameMessage, FramingError, GrpcStatus, isGrpcContentType, MessageDeframer, parseGrpcTimeout } from '../proto/grpc-wire.js';
import { isUnixSocket, type GrpcTarget } from '../contract/grpc-target.js';
import { Http2Connection, type ServerStream } from './http2/connection.js';
import { encodeHeaderBlock } from './http2/hpack.js';
import { DEFAULT_HTTP2_LIMITS, type Http2Limits } from './http2/limits.js';
import { clearStaleSocket, openToEnvoy } from './unix-socket.js';

/**
 * The gRPC server authz answers Envoy with: unary and client-streaming calls, following
 * grpc/grpc doc/PROTOCOL-HTTP2.md, on an HTTP/2 server of its own (authz/http2/). On
 * node:http2 a no-op Check cost 25-31 µs of CPU and every stream left a graph of objects
 * that only a full GC collects, which paused authz 50-115 ms every few seconds under load
 * (docs/edge.md); here it costs a few µs and leaves next to nothing. What it leaves out, on
 * purpose: compression (Envoy and the local edge never compress; a call that does gets
 * UNIMPLEMENTED or INTERNAL) and server streaming (no method here has it). A call's
 * grpc-timeout is its deadline: past it the call ends DEADLINE_EXCEEDED, whatever its
 * handler still does. Every stream is answered or reset exactly once, which is what frees
 * its slot among the connection's concurrent streams (authz/http2/connection.ts).
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
  /**
   * Listens on a Unix socket (authz as Envoy's sidecar; authz/unix-socket.ts clears a stale
   * one first and opens it to Envoy's user) or on TCP. Resolves with `target`, the bound
   * port filled in (0 picks a free one).
   */
  listen<Target extends GrpcTarget>(target: Target): Promise<Target>;
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

export interface GrpcServerOptions {
  /** What one connection may cost (authz/http2/limits.ts); tests shorten the timeouts. */
  limits?: Partial<Http2Limits>;
}

export function createGrpcServer({ limits: overrides }: GrpcServerOptions = {}): GrpcServer {
  const limits: Http2Limits = Object.freeze({ ...DEFAULT_HTTP2_LIMITS, ...overrides });
  const methods = new Map<string, Method>();
  const connections = new Set<Http2Connection>();
  const server = net.createServer({ noDelay: true }, (socket) => {
    const connection = new Http2Connection(socket, (stream) => serveCall(methods, stream, limits), limits);
    connections.add(connection);
    connection.onclose = () => connections.delete(connection);
  });
  // Past this, net.Server closes a new socket at accept (idle peers cannot hoard descriptors).
  server.maxConnections = limits.maxConnections;
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
    async listen(target) {
      if (isUnixSocket(target)) await clearStaleSocket(target.path);
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(isUnixSocket(target) ? { path: target.path } : { host: target.host, port: target.port }, () => {
          server.off('error', reject);
          resolve();
        });
      });
      if (!isUnixSocket(target)) return { ...target, port: (server.address() as AddressInfo).port };
      await openToEnvoy(target.path);
      return target;
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

function serveCall(methods: ReadonlyMap<string, Method>, stream: ServerStream, limits: Http2Limits): void {
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
  const timeout = headers['grpc-timeout'];
  const timeoutMs = timeout === undefined ? undefined : parseGrpcTimeout(timeout);
  if (timeout !== undefined && timeoutMs === undefined) return endWithStatus(stream, GrpcStatus.INTERNAL, `invalid grpc-timeout ${timeout}`);
  const deframer = new MessageDeframer(limits.maxMessageBytes);
  const call = method.unary ? serveUnary(stream, deframer, method.definition, method.unary) : serveClientStream(stream, deframer, method.definition, method.clientStream!);
  if (timeoutMs === undefined) return;
  // Timers of one duration share one list in Node, so Envoy's constant timeout costs O(1) per call.
  const deadline = setTimeout(() => call.end(GrpcStatus.DEADLINE_EXCEEDED, 'the deadline passed'), timeoutMs);
  call.onEnd = () => clearTimeout(deadline);
}

/** One call's end, from whichever comes first: the handler's answer, a bad message, the peer's reset, the deadline. */
class CallEnd {
  over = false;
  onEnd: (() => void) | undefined;
  /** A handler that is still at work when the call ends without its answer is told (a client stream's 'cancelled'). */
  onCancelled: (() => void) | undefined;

  constructor(private readonly stream: ServerStream) {}

  /** Ends the call with a status (nothing is sent if the peer has gone), unless it has ended. */
  end(code: GrpcStatus, details: string): void {
    if (!this.settle()) return;
    endWithStatus(this.stream, code, details);
    this.onCancelled?.();
  }

  answer(definition: GrpcMethodDefinition, error: GrpcError | null, response: unknown): void {
    if (this.settle()) answer(this.stream, definition, error, response);
  }

  /** Gives the stream up without an answer: the peer reset it before any handler ran. */
  abandon(): void {
    if (this.settle()) this.stream.reset(0 /* NO_ERROR: nothing is sent on a closed stream */);
  }

  private settle(): boolean {
    if (this.over) return false;
    this.over = true;
    this.onEnd?.();
    return true;
  }
}

/**
 * Messages are consumed (their bytes given back to the peer's windows) as each is whole:
 * a partial message holds the peer's window, not more of authz's memory.
 */
function pushAndConsume(stream: ServerStream, deframer: MessageDeframer, chunk: Buffer): Buffer[] {
  const heldBefore = deframer.bufferedBytes;
  const messages = deframer.push(chunk);
  stream.consume(heldBefore + chunk.length - deframer.bufferedBytes);
  return messages;
}

function serveUnary(stream: ServerStream, deframer: MessageDeframer, definition: GrpcMethodDefinition, handler: UnaryHandler<unknown, unknown>): CallEnd {
  const call = new CallEnd(stream);
  let request: Buffer | undefined;
  stream.ondata = (chunk) => {
    if (call.over) return;
    try {
      for (const message of pushAndConsume(stream, deframer, chunk)) {
        if (request) throw new FramingError(GrpcStatus.UNIMPLEMENTED, 'a unary call takes one request message');
        request = message;
      }
    } catch (error) {
      call.end((error as FramingError).code, (error as FramingError).message);
    }
  };
  stream.onend = () => {
    if (call.over) return;
    if (!request || deframer.midMessage) return void call.end(GrpcStatus.INTERNAL, 'a unary call takes one whole request message');
    let decoded: unknown;
    try {
      decoded = definition.requestDeserialize(request);
    } catch {
      return void call.end(GrpcStatus.INTERNAL, 'cannot decode the request message');
    }
    // From here the handler owns the stream's slot until it answers (a reset leaves it running).
    stream.onclose = undefined;
    handler({ request: decoded }, (error, response) => call.answer(definition, error, response));
  };
  stream.onclose = () => call.abandon();
  return call;
}

function serveClientStream(stream: ServerStream, deframer: MessageDeframer, definition: GrpcMethodDefinition, handler: ClientStreamHandler<unknown, unknown>): CallEnd {
  const end = new CallEnd(stream);
  const call = new EventEmitter() as ClientStreamCall<unknown>;
  end.onCancelled = () => call.emit('cancelled');
  const fail = (code: GrpcStatus, details: string) => end.end(code, details);
  handler(call, (error, response) => end.answer(definition, error, response));
  stream.ondata = (chunk) => {
    if (end.over) return;
    let messages: Buffer[];
    try {
      messages = pushAndConsume(stream, deframer, chunk);
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
    if (end.over) return;
    if (deframer.midMessage) return fail(GrpcStatus.INTERNAL, 'the call ended partway through a message');
    call.emit('end');
  };
  // The peer reset the stream, or the connection went: the handler is told, and the call ends here.
  stream.onclose = () => fail(GrpcStatus.CANCELLED, 'the caller cancelled');
  return end;
}

function answer(stream: ServerStream, definition: GrpcMethodDefinition, error: GrpcError | null, response: unknown): void {
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
  stream.respond(
    encodeHeaderBlock([
      [':status', '200'],
      ['content-type', 'application/grpc+proto'],
      ['grpc-status', String(code)],
      ['grpc-message', encodeGrpcMessage(details)],
    ]),
  );
}
