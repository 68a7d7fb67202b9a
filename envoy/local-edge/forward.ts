import { request as httpRequest, type Agent, type IncomingMessage, type ServerResponse } from 'node:http';
import type { RequestFigureSink } from '../../contract/request-figure-recorder.js';
import { upstreamResponseHeaders, type HeaderMap } from './downstream-headers.js';

export interface UpstreamTarget {
  host: string;
  port: number;
}

/** `ip:port` or `[v6]:port` from authz's `upstream` metadata; null when malformed. */
export function parseUpstream(upstream: string): UpstreamTarget | null {
  const match = /^\[?([^\]]+?)\]?:(\d{1,5})$/.exec(upstream);
  const port = Number(match?.[2]);
  if (!match?.[1] || !Number.isInteger(port) || port < 1 || port > 65535) return null;
  return { host: match[1], port };
}

export interface ForwardOptions {
  /** Path and query in origin-form, as Envoy sends them upstream. */
  path: string;
  agent: Agent;
  /** envoy.yaml `agents.connect_timeout`: a replica that does not accept in time is a 502. */
  connectTimeoutMs: number;
  /** Answers the caller when the replica fails before sending a response head. */
  onUpstreamFailure: (error: Error) => void;
  /** Headers the edge sets whatever the replica sent (the CORS filter's, as Envoy's encoder overwrites them). */
  overrideHeaders?: Readonly<Record<string, string>>;
  /**
   * Told, for `agentId`, once the replica's answer is over (in full or cut): its status and
   * the upstream time, from sending the request to the answer's last byte. Not told when the
   * replica never answered: that 502 is the edge's, as with Envoy's access log
   * (authz/access-log-entry.ts). Fields of these options rather than a callback made per
   * request: a request adds one 'close' listener and the recorder's counter update.
   */
  requestFigures?: RequestFigureSink;
  agentId?: string | null;
  /** Whether `agentId`'s replica is its canary (authz's `version` metadata): counted as the canary's too. */
  canary?: boolean;
}

/**
 * Sends the request to the replica and streams both bodies. The response head is
 * sent in the same tick it arrives (with the body's first chunk when that came with it)
 * and every chunk is written as it arrives, so server-sent events reach the caller
 * unbuffered. A failure after the head has gone out can only cut the
 * response, as Envoy does.
 */
export function forwardRequest(
  downstream: IncomingMessage,
  response: ServerResponse,
  target: UpstreamTarget,
  headers: HeaderMap,
  options: ForwardOptions,
): void {
  const sent = performance.now();
  const upstream = httpRequest({
    host: target.host,
    port: target.port,
    method: downstream.method,
    path: options.path,
    headers: withoutUndefined(headers),
    agent: options.agent,
  });

  upstream.on('socket', (socket) => {
    if (!socket.connecting) return; // a reused keep-alive connection
    const timer = setTimeout(() => upstream.destroy(new Error(`connect to ${target.host}:${target.port} timed out`)), options.connectTimeoutMs);
    socket.once('connect', () => clearTimeout(timer));
    socket.once('close', () => clearTimeout(timer));
  });

  let relayed: IncomingMessage | undefined;
  upstream.on('response', (upstreamResponse) => {
    relayed = upstreamResponse;
    const { requestFigures, agentId, canary = false } = options;
    if (requestFigures && agentId) {
      upstreamResponse.once('close', () => requestFigures.record(agentId, upstreamResponse.statusCode ?? 502, performance.now() - sent, canary));
    }
    response.writeHead(upstreamResponse.statusCode ?? 502, { ...upstreamResponseHeaders(upstreamResponse.headers), ...options.overrideHeaders });
    upstreamResponse.pipe(response);
    // The head goes out with the first chunk of body, in one write, when that chunk came
    // with it (the pipe has written it by this tick); alone, at once, when the body is
    // still to come, so a stream's caller sees the head before its first event.
    process.nextTick(() => {
      if (!upstreamResponse.complete && !upstreamResponse.readableDidRead && !response.destroyed) response.flushHeaders();
    });
    upstreamResponse.on('aborted', () => response.destroy());
    upstreamResponse.on('error', () => response.destroy());
  });

  upstream.on('error', (error) => {
    // A replica that answered in full and then reset the connection (it stopped reading
    // an upload it had refused) has still answered: let the pipe finish the relay.
    if (relayed?.complete) return;
    if (response.headersSent) response.destroy();
    else options.onUpstreamFailure(error);
  });

  // The caller went away: stop the replica's work too.
  response.on('close', () => {
    if (!response.writableFinished) upstream.destroy();
  });

  downstream.pipe(upstream);
}

function withoutUndefined(headers: HeaderMap): Record<string, string | string[]> {
  const result: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(headers)) if (value !== undefined) result[name] = value;
  return result;
}
