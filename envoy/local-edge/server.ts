import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { applyAllowedMutations, verdictOf, type AuthzVerdict } from './authz-answer.js';
import { createAuthzClient, type AuthzClient } from './authz-client.js';
import { buildCheckRequest } from './check-request.js';
import { plainAddress, sanitiseDownstreamHeaders } from './downstream-headers.js';
import { EDGE_REPLIES, EXT_AUTHZ_TIMEOUT_MS } from './envoy-parity.js';
import { forwardRequest, parseUpstream } from './forward.js';
import { framingProblem } from './framing.js';
import { answerClientErrors } from './parser-errors.js';
import { createUpstreamAgent } from './upstream-agent.js';
import { corsFor, corsOutcome } from './cors.js';
import { createLimitedServer, type ClientLimits } from '../../control/http/client-limits.js';
import type { RequestFigureSink } from '../../contract/request-figure-recorder.js';

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
  close(): Promise<void>;
}

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

  async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const framing = framingProblem(request);
    if (framing !== null) {
      // The connection's framing is suspect: answer and close it rather than read on.
      response.setHeader('connection', 'close');
      replyPlain(response, 400, `bad request: ${framing}\n`);
      return;
    }
    // envoy.yaml runs the cors filter before ext_authz: the console's preflight never reaches authz.
    const corsAnswer = corsOutcome(cors, request.method, request.headers);
    if (corsAnswer?.kind === 'preflight') {
      response.writeHead(200, corsAnswer.headers).end();
      return;
    }
    if (corsAnswer) for (const name in corsAnswer.headers) response.setHeader(name, corsAnswer.headers[name]!);
    const requestId = randomUUID();
    const peer = { address: plainAddress(request.socket.remoteAddress), port: request.socket.remotePort ?? 0 };
    const local = { address: plainAddress(request.socket.localAddress), port: request.socket.localPort ?? 0 };
    const headers = sanitiseDownstreamHeaders(request.headers, peer.address, requestId);

    let verdict: AuthzVerdict;
    try {
      const checkRequest = buildCheckRequest({
        requestId,
        method: request.method ?? 'GET',
        host: request.headers.host ?? '',
        path: originForm(request.url),
        headers,
        peer,
        local,
      });
      verdict = verdictOf(await authz.check(checkRequest, authzTimeoutMs));
    } catch {
      // failure_mode_allow: false, and envoy.yaml's mapper of status_on_error: never forward unchecked.
      replyPlain(response, 503, EDGE_REPLIES.authzUnavailable);
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
      replyPlain(response, 503, EDGE_REPLIES.noHost);
      return;
    }
    forwardRequest(request, response, target, applyAllowedMutations(headers, verdict), {
      path: originForm(request.url),
      agent: upstreamAgent,
      connectTimeoutMs,
      onUpstreamFailure: () => replyPlain(response, 502, EDGE_REPLIES.badGateway),
      overrideHeaders: corsAnswer?.headers,
      requestFigures: options.requestFigures,
      agentId: verdict.agentId,
    });
  }

  const server = createLimitedServer({ ...DEFAULT_EDGE_CLIENT_LIMITS, ...options.clientLimits }, (request, response) => {
    handle(request, response).catch(() => {
      if (!response.headersSent) replyPlain(response, 502, EDGE_REPLIES.badGateway);
      else response.destroy();
    });
  });
  // What Node's parser refuses (over-long headers, Content-Length with Transfer-Encoding, a bad method) or times out.
  answerClientErrors(server);
  server.listen(options.port ?? 7080, options.host ?? '127.0.0.1');
  await once(server, 'listening');
  const address = server.address() as AddressInfo;

  return {
    host: address.address,
    port: address.port,
    async close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await closed;
      upstreamAgent.destroy();
      authz.close();
    },
  };
}

/** The path and query of a request line in origin- or absolute-form (framing.ts has checked the authority). */
function originForm(url: string | undefined): string {
  if (!url || url.startsWith('/')) return url || '/';
  const parsed = URL.canParse(url) ? new URL(url) : null;
  return parsed ? parsed.pathname + parsed.search : '/';
}

function replyPlain(response: ServerResponse, status: number, body: string): void {
  response.writeHead(status, { 'content-type': 'text/plain', 'content-length': Buffer.byteLength(body) }).end(body);
}
