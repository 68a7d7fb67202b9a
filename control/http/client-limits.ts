import { createServer, type RequestListener, type Server } from 'node:http';
import { createServer as createHttpsServer, type Server as HttpsServer, type ServerOptions as HttpsServerOptions } from 'node:https';
import type { Socket } from 'node:net';

/** What one client may hold of an HTTP server: time to send a request, and connections. */
export interface ClientLimits {
  /** A request whose headers are not complete by then is answered 408 and its connection closed. */
  readonly headersTimeoutMs: number;
  /** The same for the whole request, body included. */
  readonly requestTimeoutMs: number;
  /** Open connections per client address; one more is closed as soon as it is accepted. */
  readonly maxConnectionsPerAddress: number;
}

/**
 * How often Node looks for requests past headersTimeout or requestTimeout. Its default
 * (30 s) let 100 sockets trickling one header byte every 500 ms outlive a 10 s
 * headersTimeout (issue 13 item 7); once a second bounds the overshoot for the cost of
 * one walk over the open connections.
 */
export const CONNECTIONS_CHECKING_INTERVAL_MS = 1_000;

/**
 * An HTTP server that cuts slow clients off and caps connections per client address,
 * so one address cannot hold every socket of the control API or the local edge.
 * The address is the TCP peer: behind a proxy, cap at the proxy instead.
 */
export function createLimitedServer(limits: ClientLimits, listener: RequestListener): Server {
  return capConnectionsPerAddress(createServer(httpOptionsOf(limits), listener), limits);
}

/**
 * createLimitedServer's TLS twin: the same bounds on HTTP over TLS, the connection cap
 * counted on the TCP connection before its handshake, and the handshake itself held to
 * the headers deadline (Node's default, 120 s, would let a client that never finishes
 * one hold its socket that long). `tls` is the certificate and the TLS policy.
 */
export function createLimitedTlsServer(limits: ClientLimits, tls: HttpsServerOptions, listener: RequestListener): HttpsServer {
  return capConnectionsPerAddress(createHttpsServer({ ...tls, ...httpOptionsOf(limits), handshakeTimeout: limits.headersTimeoutMs }, listener), limits);
}

function httpOptionsOf(limits: ClientLimits) {
  return {
    headersTimeout: limits.headersTimeoutMs,
    requestTimeout: limits.requestTimeoutMs,
    connectionsCheckingInterval: CONNECTIONS_CHECKING_INTERVAL_MS,
  };
}

function capConnectionsPerAddress<T extends Server | HttpsServer>(server: T, limits: ClientLimits): T {
  const open = new Map<string, number>();
  server.on('connection', (socket: Socket) => {
    const address = socket.remoteAddress ?? '';
    const count = (open.get(address) ?? 0) + 1;
    if (count > limits.maxConnectionsPerAddress) {
      socket.destroy();
      return;
    }
    open.set(address, count);
    socket.once('close', () => {
      const left = (open.get(address) ?? 1) - 1;
      if (left === 0) open.delete(address);
      else open.set(address, left);
    });
  });
  return server;
}
