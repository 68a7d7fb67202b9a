import { connect, type ClientHttp2Session } from 'node:http2';
import net from 'node:net';
import { formatGrpcTarget, isUnixSocket, type GrpcTarget } from '../../contract/grpc-target.js';

/** How long a connection to authz may take to open before calls stop waiting on it. */
const CONNECT_TIMEOUT_MS = 2_000;
/** How long a PING may go unanswered, after a call missed its deadline, before the connection is dropped. */
const PING_TIMEOUT_MS = 1_000;

/**
 * One plaintext HTTP/2 connection to authz at `target` (its Unix socket, as Envoy reaches
 * its sidecar, or host:port), shared by every call and opened again, on the next call,
 * once it has closed, been told GOAWAY, or failed to open in time: gRPC's channel,
 * without its load balancing, for one address.
 */
export class Http2Channel {
  #session: ClientHttp2Session | null = null;
  #closed = false;
  readonly #name: string;

  constructor(private readonly target: GrpcTarget) {
    this.#name = formatGrpcTarget(target);
  }

  /** The open connection, or a new one (calls made on it while it connects wait for it). */
  session(): ClientHttp2Session {
    if (this.#closed) throw new Error('the channel to authz is closed');
    const current = this.#session;
    if (current !== null && !current.closed && !current.destroyed) return current;
    const { target } = this;
    // node:http2 dials TCP from the URL; a socket path goes through createConnection instead.
    const session = isUnixSocket(target)
      ? connect('http://localhost', { createConnection: () => net.connect(target.path) })
      : connect(`http://${this.#name}`);
    this.#session = session;
    // A failure reaches each call through its stream; the session's own event needs a listener.
    session.on('error', () => undefined);
    const forget = () => {
      if (this.#session === session) this.#session = null;
    };
    session.once('close', forget);
    // PROTOCOL-HTTP2.md, "GOAWAY Frame": no new calls on this connection; Node closes it once its calls end.
    session.once('goaway', forget);
    const connectTimer = setTimeout(() => {
      if (session.connecting) session.destroy(new Error(`connecting to authz at ${this.#name} timed out`));
    }, CONNECT_TIMEOUT_MS);
    session.once('connect', () => clearTimeout(connectTimer));
    session.once('close', () => clearTimeout(connectTimer));
    return session;
  }

  /**
   * A call on `session` missed its deadline: authz may be merely slow, or the connection
   * may be dead without TCP knowing (PROTOCOL-HTTP2.md, "PING Frame": an unanswered
   * client PING fails the connection's calls). Drops the connection unless it answers a PING.
   */
  probe(session: ClientHttp2Session): void {
    if (session.destroyed || session.connecting) return;
    const timer = setTimeout(() => session.destroy(), PING_TIMEOUT_MS);
    const sent = session.ping((error) => {
      clearTimeout(timer);
      if (error) session.destroy();
    });
    if (!sent) clearTimeout(timer); // too many PINGs already waiting: one of them decides
  }

  close(): void {
    this.#closed = true;
    this.#session?.close();
    this.#session = null;
  }
}
