import { EventEmitter } from 'node:events';
import { Server, ServerCredentials, type ServerReadableStream, type UntypedServiceImplementation } from '@grpc/grpc-js';
import { DEFAULT_HTTP2_LIMITS } from './http2/limits.js';
import type { ClientStreamCall, ClientStreamHandler, GrpcCallback, GrpcServer } from './grpc-server.js';
import { formatGrpcTarget, isUnixSocket } from '../contract/grpc-target.js';
import { clearStaleSocket, openToEnvoy } from './unix-socket.js';

/**
 * authz's gRPC services on @grpc/grpc-js's Server (AUTHZ_SERVER=grpc-js): the design card's
 * server, which authz ran on before its own (authz/grpc-server.ts; docs/decisions.md,
 * "authz's own HTTP/2 server"). It stays one setting away, a fallback to a well-kept
 * library should the own server ever misbehave, at more CPU per Check. The method
 * definitions, the handlers and the bounds on what a peer may cost are the same;
 * docs/edge.md, "The fallback", lists what grpc-js answers differently to calls no Envoy
 * sends.
 */

/**
 * The own server's bounds, in grpc-js's terms (authz/http2/limits.ts): a Check is a few
 * KiB; 100 streams at once per connection; a connection with no call for 5 minutes is
 * closed. grpc-js also pings a connection quiet for a minute and drops it when the ping
 * goes unanswered for 20 s, as a peer that vanished without a FIN would otherwise hold its
 * streams. No maximum connection age: Envoy keeps its few connections, and a GOAWAY every
 * so often would only cost reconnections. Channelz stays on, though nobody reads it: with
 * 'grpc.enable_channelz' 0, grpc-js 1.14's forceShutdown no longer reaches the open
 * connections (server.js tracks them in `sessions` only in _channelzSessionHandler), so a
 * stop's grace would never end.
 */
export const GRPC_JS_SERVER_OPTIONS = Object.freeze({
  'grpc.max_receive_message_length': DEFAULT_HTTP2_LIMITS.maxMessageBytes,
  'grpc.max_concurrent_streams': DEFAULT_HTTP2_LIMITS.maxConcurrentStreams,
  'grpc.max_connection_idle_ms': DEFAULT_HTTP2_LIMITS.idleTimeoutMs,
  'grpc.keepalive_time_ms': 60_000,
  'grpc.keepalive_timeout_ms': 20_000,
});

export function createGrpcJsServer(): GrpcServer {
  const server = new Server({ ...GRPC_JS_SERVER_OPTIONS });
  return {
    addService(service, implementation) {
      const handlers: UntypedServiceImplementation = {};
      for (const [name, definition] of Object.entries(service)) {
        const handler = implementation[name];
        if (!handler) continue;
        if (definition.responseStream) throw new Error(`${definition.path}: server-streaming methods are not supported`);
        // A unary handler reads only `call.request` and answers through the callback, as grpc-js's do.
        handlers[name] = definition.requestStream ? clientStreamHandler(handler as unknown as ClientStreamHandler<unknown, unknown>) : (handler as never);
      }
      // Methods left out answer UNIMPLEMENTED: grpc-js registers its default handler for them.
      server.addService(service as never, handlers);
    },
    async listen(target) {
      if (isUnixSocket(target)) await clearStaleSocket(target.path);
      // grpc-js takes gRPC's names as they are: unix:/path or host:port.
      const port = await new Promise<number>((resolve, reject) =>
        server.bindAsync(formatGrpcTarget(target), ServerCredentials.createInsecure(), (error, bound) => (error ? reject(error) : resolve(bound))),
      );
      if (!isUnixSocket(target)) return { ...target, port };
      await openToEnvoy(target.path);
      return target;
    },
    shutdown(graceMs = Infinity) {
      return new Promise((resolve) => {
        // forceShutdown destroys each session still open, which closes it: tryShutdown's callback follows.
        const late = Number.isFinite(graceMs) ? setTimeout(() => server.forceShutdown(), graceMs) : undefined;
        server.tryShutdown(() => {
          clearTimeout(late);
          resolve();
        });
      });
    },
    forceShutdown() {
      server.forceShutdown();
    },
  };
}

/**
 * grpc-js's client-streaming call as authz/grpc-server.ts's ClientStreamCall: 'data' for
 * each message, then one 'end' or one 'cancelled', nothing after the handler answered. A
 * grpc-js call is a Readable, which emits 'end' only once its messages are read, and emits
 * 'cancelled' after every call, answered or not (its status sent, grpc-js notifies the
 * cancel): read here, so a handler that listens only for 'end' still hears it.
 */
function clientStreamHandler(handler: ClientStreamHandler<unknown, unknown>) {
  return (stream: ServerReadableStream<unknown, unknown>, callback: GrpcCallback<unknown>) => {
    const call = new EventEmitter() as ClientStreamCall<unknown>;
    let over = false;
    const finish = (event: 'end' | 'cancelled') => {
      if (over) return;
      over = true;
      call.emit(event);
    };
    handler(call, (error, response) => {
      over = true;
      callback(error, response);
    });
    stream.on('data', (message: unknown) => {
      if (!over) call.emit('data', message);
    });
    stream.on('end', () => finish('end'));
    stream.on('cancelled', () => finish('cancelled'));
    // A Duplex destroyed with an error (grpc-js's own listener turns it into the status).
    stream.on('error', () => finish('cancelled'));
  };
}
