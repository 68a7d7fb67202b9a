import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Server as HttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { applyAllowedMutations, verdictOf, type AuthzVerdict } from './authz-answer.js';
import { createAuthzClient, type AuthzClient } from './authz-client.js';
import { buildCheckRequest } from './check-request.js';
import { plainAddress, sanitiseDownstreamHeaders } from './downstream-headers.js';
import { EDGE_REPLIES, EXT_AUTHZ_TIMEOUT_MS } from './envoy-parity.js';
import { httpsRedirectLocation, redirectsToHttps } from './https-redirect.js';
import { openCertificateStore, type CertificateStore, type CertificateStoreOptions, type EdgeLog } from './certificate-store.js';
import type { CertificateFiles } from './certificate-pair.js';
import { LOCAL_EDGE_ALPN_PROTOCOLS, TLS_SERVER_POLICY } from './tls-policy.js';
import { forwardRequest, parseUpstream } from './forward.js';
import { framingProblem } from './framing.js';
import { answerClientErrors } from './parser-errors.js';
import { createUpstreamAgent } from './upstream-agent.js';
import { corsFor, corsOutcome } from './cors.js';
import { createLimitedServer, createLimitedTlsServer, type ClientLimits } from '../../control/http/client-limits.js';
import type { RequestFigureSink } from '../../contract/request-figure-recorder.js';
import { isTracedPath, type EdgeSpanSink } from '../../contract/edge-trace.js';
import { DEFAULT_AGENT_SUBNET_POOL, parseSubnetPool, type SubnetPool } from '../../contract/agent-subnet-pool.js';

export interface LocalEdgeOptions {
  /** Default 7080, as envoy.yaml's listener; 0 picks a free port. */
  port?: number;
  /** Default 127.0.0.1: the local edge is for one machine. */
  host?: string;
  /** authz's gRPC server as gRPC names it: `unix:/path` of its socket (as Envoy reaches its sidecar) or `host:port`. */
  authzAddress: string;
  /**
   * How a Check reaches authz; default: gRPC to `authzAddress`, as Envoy's ext_authz sends
   * it. bench/inprocess-edge.ts passes one that decides in the edge's own process, to
   * measure what the gRPC hop costs (docs/edge.md).
   */
  authzClient?: AuthzClient;
  /** Default: envoy.yaml's ext_authz timeout. */
  authzTimeoutMs?: number;
  /** Default: envoy.yaml's agents.connect_timeout (2 s). */
  upstreamConnectTimeoutMs?: number;
  /** Default: DEFAULT_EDGE_CLIENT_LIMITS. */
  clientLimits?: Partial<ClientLimits>;
  /**
   * The web console's origin (scheme://host[:port]), whose CORS preflights the edge answers
   * as envoy.yaml's cors filter does (envoy/local-edge/cors.ts); none: no CORS at all.
   */
  consoleOrigin?: string;
  /**
   * Told of every request an agent answered, as Envoy's access log tells authz
   * (main.ts passes a recorder writing to Redis); none for tests of forwarding alone.
   */
  requestFigures?: RequestFigureSink;
  /**
   * Told of each invoke's edge span once its answer is over, as authz makes it from
   * Envoy's access log (authz/access-log-entry.ts, `edgeSpanOf`); none: no edge spans.
   */
  edgeSpans?: EdgeSpanSink;
  /**
   * The only ranges the edge forwards to (EDGE_UPSTREAM_SUBNETS): the podman agent subnet
   * pool, default DEFAULT_AGENT_SUBNET_POOL. An `upstream` outside them gets a 502 and is
   * never connected to, whatever authz or Redis says (issue 31, finding 1).
   */
  upstreamSubnets?: readonly SubnetPool[];
  /**
   * HTTPS beside the plain port, as envoy.yaml's TLS listener (EDGE_TLS_CERT_FILE,
   * EDGE_TLS_KEY_FILE, EDGE_HTTPS_PORT); none: plain HTTP only.
   */
  tls?: LocalEdgeTlsOptions;
  /**
   * EDGE_HTTP_REDIRECT: the plain port answers 308 to https, but for ACME challenges
   * (envoy.yaml's redirect route). Needs `tls`.
   */
  httpRedirect?: boolean;
  /** Where certificate loads, reloads and refused pairs are told; default: nowhere. */
  log?: EdgeLog;
}

export interface LocalEdgeTlsOptions extends CertificateFiles {
  /** Default 7443 (envoy.yaml's TLS listener is 443, which needs privileges); 0 picks a free port. */
  port?: number;
  /** How often the certificate files are read besides their directory's watch; default 5 s. */
  checkIntervalMs?: number;
  /** Custom domains' certificates from Redis (domain-certificates.ts; main.ts opens it); the caller closes it. */
  customDomains?: CertificateStoreOptions['customDomains'];
}

export const DEFAULT_EDGE_CLIENT_LIMITS: ClientLimits = Object.freeze({
  // envoy.yaml's request_headers_timeout.
  headersTimeoutMs: 10_000,
  // Node's own default: uploads to an agent may be large and slow.
  requestTimeoutMs: 300_000,
  maxConnectionsPerAddress: 256,
});

export interface RunningLocalEdge {
  host: string;
  port: number;
  /** The HTTPS port, or null without `tls`. */
  httpsPort: number | null;
  close(): Promise<void>;
}

type Scheme = 'http' | 'https';

/**
 * A small Node stand-in for envoy.yaml where no Envoy binary is installed: each request
 * is checked by authz exactly as ext_authz would, and the answer is obeyed as Envoy
 * obeys it. The destination is only ever the `upstream` authz returned.
 */
export async function startLocalEdge(options: LocalEdgeOptions): Promise<RunningLocalEdge> {
  const authz = options.authzClient ?? createAuthzClient(options.authzAddress);
  const authzTimeoutMs = options.authzTimeoutMs ?? EXT_AUTHZ_TIMEOUT_MS;
  // Keep-alive to replicas, closing idle connections after 4 s like envoy.yaml's
  // upstream idle_timeout, before a replica's own server would close them under us.
  const upstreamAgent = createUpstreamAgent({ keepAlive: true, timeout: 4_000 });
  const connectTimeoutMs = options.upstreamConnectTimeoutMs ?? 2_000;
  const cors = corsFor(options.consoleOrigin);
  const upstreamSubnets = options.upstreamSubnets ?? [parseSubnetPool('EDGE_UPSTREAM_SUBNETS', DEFAULT_AGENT_SUBNET_POOL)];
  const forwardable = (host: string) => upstreamSubnets.some((pool) => pool.contains(host));

  if (options.httpRedirect && !options.tls) throw new Error('the local edge redirects to https (httpRedirect) only when it serves https (tls)');
  let httpsPort: number | null = null;

  async function handle(request: IncomingMessage, response: ServerResponse, scheme: Scheme): Promise<void> {
    const startMs = performance.timeOrigin + performance.now();
    const requestId = randomUUID();
    // Every answer names its request, the edge's own as much as authz's and the agent's
    // (envoy.yaml: always_set_request_id_in_response), so a caller can quote it.
    response.setHeader('x-request-id', requestId);
    const framing = framingProblem(request, scheme);
    if (framing !== null) {
      // The connection's framing is suspect: answer and close it rather than read on.
      response.setHeader('connection', 'close');
      replyPlain(response, 400, `bad request: ${framing}\n`, requestId);
      return;
    }
    // envoy.yaml runs the cors filter before ext_authz: the console's preflight never reaches authz.
    const corsAnswer = corsOutcome(cors, request.method, request.headers);
    if (corsAnswer?.kind === 'preflight') {
      response.writeHead(200, corsAnswer.headers).end();
      return;
    }
    if (corsAnswer) for (const name in corsAnswer.headers) response.setHeader(name, corsAnswer.headers[name]!);
    const path = originForm(request.url);
    // envoy.yaml's redirect route: after the cors filter, without a Check (ext_authz is off on it).
    if (scheme === 'http' && options.httpRedirect && httpsPort !== null && redirectsToHttps(path)) {
      const location = httpsRedirectLocation(request.headers.host, path, httpsPort);
      if (location === null) replyPlain(response, 400, 'bad request: the Host header names no host an https URL can carry\n', requestId);
      else response.writeHead(308, { location, 'content-length': 0 }).end();
      return;
    }
    const peer = { address: plainAddress(request.socket.remoteAddress), port: request.socket.remotePort ?? 0 };
    const local = { address: plainAddress(request.socket.localAddress), port: request.socket.localPort ?? 0 };
    const headers = sanitiseDownstreamHeaders(request.headers, peer.address, requestId, scheme);

    let verdict: AuthzVerdict;
    try {
      const checkRequest = buildCheckRequest({
        requestId,
        method: request.method ?? 'GET',
        host: request.headers.host ?? '',
        path,
        headers,
        peer,
        local,
        scheme,
      });
      verdict = verdictOf(await authz.check(checkRequest, authzTimeoutMs));
    } catch {
      // failure_mode_allow: false, and envoy.yaml's mapper of status_on_error: never forward unchecked.
      replyPlain(response, 503, EDGE_REPLIES.authzUnavailable, requestId);
      return;
    }

    if (verdict.kind === 'deny') {
      for (const [name, value] of verdict.headers) response.appendHeader(name, value);
      response.setHeader('content-length', Buffer.byteLength(verdict.body));
      response.writeHead(verdict.status).end(verdict.body);
      return;
    }
    const target = verdict.upstream === null ? null : parseUpstream(verdict.upstream);
    if (target === null) {
      replyPlain(response, 503, EDGE_REPLIES.noHost, requestId);
      return;
    }
    if (!forwardable(target.host)) {
      replyPlain(response, 502, EDGE_REPLIES.badGateway, requestId);
      return;
    }
    forwardRequest(request, response, target, applyAllowedMutations(headers, verdict), {
      path,
      agent: upstreamAgent,
      connectTimeoutMs,
      onUpstreamFailure: () => replyPlain(response, 502, EDGE_REPLIES.badGateway, requestId),
      overrideHeaders: { ...corsAnswer?.headers, 'x-request-id': requestId },
      requestFigures: options.requestFigures,
      agentId: verdict.agentId,
      canary: verdict.canary,
    });
    const { edgeSpans } = options;
    if (edgeSpans && verdict.agentId && verdict.trace && isTracedPath(path)) {
      const { agentId, trace, canary } = verdict;
      response.once('close', () => edgeSpans.record({
        agentId,
        ...trace,
        startMs,
        durationMs: performance.timeOrigin + performance.now() - startMs,
        method: request.method ?? 'GET',
        path: path.split('?')[0]!,
        // Not sent at all (the caller went away first): no status, as Envoy logs 0.
        status: response.headersSent ? response.statusCode : 0,
        requestId,
        canary,
      }));
    }
  }

  const listenerFor = (scheme: Scheme) => (request: IncomingMessage, response: ServerResponse) => {
    handle(request, response, scheme).catch(() => {
      if (!response.headersSent) replyPlain(response, 502, EDGE_REPLIES.badGateway, String(response.getHeader('x-request-id') ?? randomUUID()));
      else response.destroy();
    });
  };
  const limits = { ...DEFAULT_EDGE_CLIENT_LIMITS, ...options.clientLimits };
  const host = options.host ?? '127.0.0.1';

  const server = createLimitedServer(limits, listenerFor('http'));
  // What Node's parser refuses (over-long headers, Content-Length with Transfer-Encoding, a bad method) or times out.
  answerClientErrors(server);
  let certificates: CertificateStore | null = null;
  let tlsServer: HttpsServer | null = null;
  const close = async () => {
    certificates?.close();
    await Promise.all([server, tlsServer].map((listening) => listening?.listening && closeServer(listening)));
    upstreamAgent.destroy();
    authz.close();
  };
  try {
    // HTTPS first: the plain port's redirect names its port. A pair that cannot be served stops the start.
    if (options.tls) {
      const { certFile, keyFile, checkIntervalMs, customDomains } = options.tls;
      certificates = await openCertificateStore({ certFile, keyFile, checkIntervalMs, customDomains, policy: TLS_SERVER_POLICY, log: options.log });
      tlsServer = createTlsServer(certificates, limits, listenerFor('https'));
      await listen(tlsServer, options.tls.port ?? 7443, host);
      httpsPort = (tlsServer.address() as AddressInfo).port;
    }
    await listen(server, options.port ?? 7080, host);
  } catch (error) {
    await close();
    throw error;
  }
  const address = server.address() as AddressInfo;
  return { host: address.address, port: address.port, httpsPort, close };
}

/**
 * envoy.yaml's TLS listener: the store's certificate for the name the client asks for
 * (SNI), and for clients that name none; a new pair in the store takes new handshakes,
 * and open connections keep theirs.
 */
function createTlsServer(certificates: CertificateStore, limits: ClientLimits, listener: (request: IncomingMessage, response: ServerResponse) => void): HttpsServer {
  const server = createLimitedTlsServer(
    limits,
    {
      ...certificates.defaultContextOptions(),
      ALPNProtocols: [...LOCAL_EDGE_ALPN_PROTOCOLS],
      SNICallback: (servername, done) => done(null, certificates.select(servername)),
    },
    listener,
  );
  certificates.onChange(() => server.setSecureContext(certificates.defaultContextOptions()));
  answerClientErrors(server);
  return server;
}

async function listen(server: Server | HttpsServer, port: number, host: string): Promise<void> {
  server.listen(port, host);
  await once(server, 'listening');
}

async function closeServer(server: Server | HttpsServer): Promise<void> {
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeAllConnections();
  await closed;
}

/** The path and query of a request line in origin- or absolute-form (framing.ts has checked the authority). */
function originForm(url: string | undefined): string {
  if (!url || url.startsWith('/')) return url || '/';
  const parsed = URL.canParse(url) ? new URL(url) : null;
  return parsed ? parsed.pathname + parsed.search : '/';
}

function replyPlain(response: ServerResponse, status: number, body: string, requestId: string): void {
  response.writeHead(status, { 'content-type': 'text/plain', 'content-length': Buffer.byteLength(body), 'x-request-id': requestId }).end(body);
}
