import http, { type IncomingMessage, type OutgoingHttpHeaders } from 'node:http';
import https from 'node:https';
import { Readable } from 'node:stream';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
import type { Fetch } from './language-model.js';

/**
 * The fetch for the model provider: HttpFetch, unless Node was asked to send HTTP through
 * the proxy the environment names (NODE_USE_ENV_PROXY=1 or --use-env-proxy). Node's
 * documentation has the global fetch and its global agents honour that, and HttpFetch's
 * agents are its own, so then provider calls go through the global fetch as they did
 * before HttpFetch.
 */
export function providerFetchFor(env: NodeJS.ProcessEnv, execArgv: readonly string[]): { fetch: Fetch; close(): void } {
  const nodeOptions = (env['NODE_OPTIONS'] ?? '').split(/\s+/);
  const proxied = env['NODE_USE_ENV_PROXY'] === '1' || execArgv.includes('--use-env-proxy') || nodeOptions.includes('--use-env-proxy');
  if (proxied) return { fetch: globalThis.fetch, close: () => {} };
  const httpFetch = new HttpFetch();
  return { fetch: httpFetch.fetch, close: () => httpFetch.close() };
}

/** Statuses whose response has no body (Fetch standard, "null body status"): Response refuses one. */
const NULL_BODY_STATUSES = new Set([101, 103, 204, 205, 304]);
const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);

/**
 * The model provider's fetch, over node:http and node:https with keep-alive agents of its
 * own. Every invoke makes one provider call at least, and through the global fetch
 * (undici) the runtime spent 12 to 25% more CPU per invoke in the sessions benchmark
 * (docs/decisions.md, "The provider called through node:http"): work that a session
 * call's answer waits behind when fifty invokes arrive together.
 *
 * It keeps what of fetch the provider packages rely on:
 * - a failure before any answer rejects with `TypeError('fetch failed')` and the system
 *   error as its cause, as undici does, so the SDK reports "Cannot connect to API" and
 *   provider-failure.ts finds the code (ECONNREFUSED, …) along the causes;
 * - an abort rejects with the signal's reason, before the answer or while its body is
 *   read, so the deadline's TimeoutError is what the SDK sees;
 * - a body that says content-encoding gzip, deflate or br is decoded (no accept-encoding
 *   is sent, so a server that follows HTTP sends none);
 * - certificates are checked as fetch checks them: Node's CA store and NODE_EXTRA_CA_CERTS;
 * - a kept connection that the server closed as the request went out costs no failure
 *   (exchange).
 *
 * Whatever it does not do goes to `fallback` (the global fetch) whole: a Request object, a
 * body other than a string or bytes, a scheme other than http and https, and a redirect,
 * which fetch follows and providers do not send.
 */
export class HttpFetch {
  private readonly agents = {
    'http:': new http.Agent({ keepAlive: true }),
    'https:': new https.Agent({ keepAlive: true }),
  };

  constructor(private readonly fallback: Fetch = globalThis.fetch) {}

  readonly fetch: Fetch = async (input, init = {}) => {
    const url = typeof input === 'string' ? new URL(input) : input instanceof URL ? input : undefined;
    const body = init.body ?? undefined;
    const sendable = body === undefined || typeof body === 'string' || body instanceof Uint8Array;
    if (url === undefined || !sendable || (url.protocol !== 'http:' && url.protocol !== 'https:')) return this.fallback(input, init);

    const signal = init.signal ?? undefined;
    signal?.throwIfAborted();
    const method = (init.method ?? 'GET').toUpperCase();
    const answer = await this.exchange(url, method, headersOf(init.headers, body), body, signal);
    if (REDIRECT_STATUSES.has(answer.statusCode ?? 0) && answer.headers.location !== undefined) {
      answer.resume();
      return this.fallback(input, init);
    }
    return toResponse(answer, method, signal);
  };

  /** Closes the kept connections. */
  close(): void {
    this.agents['http:'].destroy();
    this.agents['https:'].destroy();
  }

  /**
   * Sends the request; resolves with the answer once its head has arrived. A kept connection
   * that the server closed as the request went out fails it with ECONNRESET (or EPIPE)
   * before any answer: a race every keep-alive client has with the server's idle timeout.
   * Node's documentation gives the cure (http.md, `request.reusedSocket`): send it again,
   * here once and on a connection of its own, so a pool of stale connections cannot fail it twice.
   */
  private async exchange(url: URL, method: string, headers: OutgoingHttpHeaders, body: string | Uint8Array | undefined, signal: AbortSignal | undefined): Promise<IncomingMessage> {
    const agent = this.agents[url.protocol as 'http:' | 'https:'];
    try {
      return await this.exchangeOnce(url, method, headers, body, signal, agent);
    } catch (failure) {
      if (!(failure instanceof StaleConnectionError)) throw failure;
      return this.exchangeOnce(url, method, headers, body, signal, false);
    }
  }

  private exchangeOnce(url: URL, method: string, headers: OutgoingHttpHeaders, body: string | Uint8Array | undefined, signal: AbortSignal | undefined, agent: http.Agent | false): Promise<IncomingMessage> {
    const client = url.protocol === 'https:' ? https : http;
    return new Promise((resolve, reject) => {
      // agent false: a connection of this request's own, closed after it.
      const request = client.request(url, { method, headers, agent });
      const abort = () => request.destroy(signal?.reason);
      signal?.addEventListener('abort', abort, { once: true });
      request.once('response', (answer) => {
        // From here the body's stream carries an abort (toResponse).
        signal?.removeEventListener('abort', abort);
        resolve(answer);
      });
      request.once('error', (error: NodeJS.ErrnoException) => {
        signal?.removeEventListener('abort', abort);
        if (signal?.aborted) reject(signal.reason);
        else if (request.reusedSocket && STALE_CONNECTION_CODES.has(error.code ?? '')) reject(new StaleConnectionError(error));
        else reject(new TypeError('fetch failed', { cause: error }));
      });
      request.end(body);
    });
  }
}

/** How a request fails on a kept connection the server had closed ("socket hang up" is ECONNRESET too). */
const STALE_CONNECTION_CODES = new Set(['ECONNRESET', 'EPIPE']);

class StaleConnectionError extends Error {
  constructor(cause: Error) {
    super('the kept connection was closed by the server', { cause });
  }
}

/** The request's headers as node:http takes them, with the body's length. */
function headersOf(init: HeadersInit | undefined, body: string | Uint8Array | undefined): OutgoingHttpHeaders {
  const headers: OutgoingHttpHeaders = {};
  // Headers validates names and values as fetch would, and lower-cases the names.
  for (const [name, value] of new Headers(init)) headers[name] = value;
  if (body !== undefined) headers['content-length'] = typeof body === 'string' ? Buffer.byteLength(body) : body.byteLength;
  return headers;
}

function toResponse(answer: IncomingMessage, method: string, signal: AbortSignal | undefined): Response {
  const status = answer.statusCode ?? 0;
  if (status < 200 || status > 599) {
    // Response takes no other status: a server that answers one is broken, and the call fails as if unreachable.
    answer.destroy();
    throw new TypeError('fetch failed', { cause: new Error(`the server answered with status ${status}`) });
  }
  const headers = new Headers();
  for (let index = 0; index < answer.rawHeaders.length; index += 2) headers.append(answer.rawHeaders[index]!, answer.rawHeaders[index + 1]!);
  const init = { status, statusText: answer.statusMessage ?? '', headers };
  if (method === 'HEAD' || NULL_BODY_STATUSES.has(status)) {
    answer.resume();
    return new Response(null, init);
  }
  const abort = () => answer.destroy(signal?.reason);
  signal?.addEventListener('abort', abort, { once: true });
  answer.once('close', () => signal?.removeEventListener('abort', abort));
  if (signal?.aborted) abort();
  return new Response(Readable.toWeb(decoded(answer, headers.get('content-encoding'))) as ReadableStream<Uint8Array>, init);
}

/** The body decoded as fetch decodes it; an encoding it does not know is passed on as it came. */
function decoded(answer: IncomingMessage, encoding: string | null): Readable {
  const decoder = decoderFor(encoding?.trim().toLowerCase());
  if (decoder === undefined) return answer;
  // An error on either side (an abort, a corrupt body) ends the other.
  answer.once('error', (error) => decoder.destroy(error));
  decoder.once('error', () => answer.destroy());
  return answer.pipe(decoder);
}

function decoderFor(encoding: string | undefined) {
  switch (encoding) {
    case 'gzip':
    case 'x-gzip':
      return createGunzip();
    case 'deflate':
      return createInflate();
    case 'br':
      return createBrotliDecompress();
    default:
      return undefined;
  }
}
