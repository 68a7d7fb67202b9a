import http, { type IncomingMessage, type OutgoingHttpHeaders, type RequestOptions } from 'node:http';
import https from 'node:https';
import { setTimeout as sleep } from 'node:timers/promises';
import { urlToHttpOptions } from 'node:url';
import { TokenFileError, type TokenSource } from './bearer-token-file.js';
import { SessionsUnavailableError } from './sessions-api-errors.js';

export type Method = 'GET' | 'POST' | 'PUT' | 'DELETE';

/** An answer agent services gave, other than the ones the transport deals with itself (401, 429, 5xx). */
export interface Answer {
  status: number;
  /** The parsed JSON body; undefined when there was none or it was not JSON. */
  body: unknown;
  /** The ETag header: which session and version a Sessions API answer is of. */
  etag?: string;
}

/**
 * What the Sessions API client needs of agent services: one call, answered. The transport
 * makes each call a request of its own; BatchedCalls (batched-calls.ts) groups calls made
 * at once into fewer requests. Either answers a call the same way.
 */
export interface AgentServicesCalls {
  /**
   * `headers` go with the call (If-None-Match, for a read). `earlier` is an answer the call
   * already had within a batch, one the transport deals with (401, 429, 5xx): it counts as the
   * call's first try, so the call is tried as often and waits as long as it would alone.
   */
  request(method: Method, path: string, body?: unknown, headers?: Record<string, string>, earlier?: RawAnswer): Promise<Answer>;
}

export interface TransportOptions {
  /** AGENT_SERVICES_URL, without a trailing slash. */
  baseUrl: string;
  token: TokenSource;
  /** Deadline of one request, its answer's body included. */
  timeoutMs?: number;
  /** Tries of one call, the first included. */
  attempts?: number;
  /** First pause between tries, doubled each time. */
  backoffMs?: number;
  /** A 429 asking for a longer wait than this fails at once: a caller is waiting. */
  maxRetryAfterMs?: number;
  /** An answer whose body is larger fails the call; MAX_ANSWER_BYTES unless a test wants less. */
  maxAnswerBytes?: number;
  wait?: (ms: number) => Promise<unknown>;
}

/**
 * Tight on purpose: the caller of /invoke waits through all of it, and a store that does
 * not answer within seconds is better reported than waited for.
 */
export const TRANSPORT_DEFAULTS = { timeoutMs: 2000, attempts: 3, backoffMs: 50, maxRetryAfterMs: 1000 } as const;

/**
 * The most of an answer's body read before the call fails. The largest body agent
 * services send is a session's GET: its messages, at most SESSION_MAX_BYTES of compact
 * JSON (16 MiB at most, on both sides, 1 MiB by default), and a short envelope. Four times
 * that leaves room for any re-encoding on the way while still bounding what a faulty or
 * hostile answer can make this process hold.
 */
export const MAX_ANSWER_BYTES = 64 * 1_048_576;

/** Connections kept open to agent services; more requests at once wait for one, within their deadline. */
const MAX_SOCKETS = 64;

// Failures before a request leaves this process, after which even a write can be sent again.
const NOT_SENT_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);

/** The answer's body passed the transport's maxAnswerBytes; it was not read further. */
export class AnswerTooLargeError extends Error {
  override readonly name = 'AnswerTooLargeError';
}

/** The deadline passed before the answer was read whole. */
class DeadlineError extends Error {
  override readonly name = 'TimeoutError';
}

/** An answer as agent services gave it, with the Retry-After header the transport honours. */
export interface RawAnswer extends Answer {
  retryAfter: string | null;
}

/**
 * One call to agent services: the bearer token, a deadline, bounded retries. Reads and
 * deletes are tried again after any failure; writes only after one that surely did not
 * apply them (no connection made, 401, 429), since a write sent twice could add a turn
 * twice. What is left after the tries is a SessionsUnavailableError, with
 * `mayHaveCommitted` when a write's outcome is unknown.
 *
 * Requests go through node:http (node:https for an https URL) and one keep-alive agent of
 * this transport's own: every invoke makes two calls, and a call through the global fetch
 * (undici) costs well over twice the CPU of one through http.request.
 */
export class AgentServicesTransport implements AgentServicesCalls {
  private readonly client: typeof http | typeof https;
  private readonly agent: http.Agent;
  /** Where and how to connect, from AGENT_SERVICES_URL; `pathPrefix` goes before each call's path. */
  private readonly target: Pick<RequestOptions, 'hostname' | 'port'> & { pathPrefix: string };
  private readonly timeoutMs: number;
  private readonly attempts: number;
  private readonly backoffMs: number;
  private readonly maxRetryAfterMs: number;
  private readonly maxAnswerBytes: number;
  private readonly wait: (ms: number) => Promise<unknown>;

  constructor(private readonly options: TransportOptions) {
    const url = new URL(options.baseUrl);
    this.client = url.protocol === 'https:' ? https : http;
    this.agent = new this.client.Agent({ keepAlive: true, maxSockets: MAX_SOCKETS });
    // urlToHttpOptions unbrackets an IPv6 host, as http.request wants it.
    const { hostname, port } = urlToHttpOptions(url);
    this.target = { hostname, port, pathPrefix: url.pathname.replace(/\/+$/, '') };
    this.timeoutMs = options.timeoutMs ?? TRANSPORT_DEFAULTS.timeoutMs;
    this.attempts = options.attempts ?? TRANSPORT_DEFAULTS.attempts;
    this.backoffMs = options.backoffMs ?? TRANSPORT_DEFAULTS.backoffMs;
    this.maxRetryAfterMs = options.maxRetryAfterMs ?? TRANSPORT_DEFAULTS.maxRetryAfterMs;
    this.maxAnswerBytes = options.maxAnswerBytes ?? MAX_ANSWER_BYTES;
    this.wait = options.wait ?? sleep;
  }

  /** `headers` go with the request besides the transport's own (If-None-Match, for a read). */
  async request(method: Method, path: string, body?: unknown, headers: Record<string, string> = {}, earlier?: RawAnswer): Promise<Answer> {
    const repeatable = method === 'GET' || method === 'DELETE';
    let reloadToken = false;
    for (let attempt = 1; ; attempt += 1) {
      const final = attempt >= this.attempts;
      const tries = attempt > 1 ? ` after ${attempt} tries` : '';
      let answer: RawAnswer;
      try {
        answer = attempt === 1 && earlier !== undefined ? earlier : await this.exchange(method, path, body, reloadToken, headers);
      } catch (error) {
        if (error instanceof TokenFileError) throw new SessionsUnavailableError(error.message, false, { cause: error });
        const notSent = wasNotSent(error);
        // An answer too large would be as large the next time.
        if (!final && (repeatable || notSent) && !(error instanceof AnswerTooLargeError)) {
          await this.wait(this.backoff(attempt));
          continue;
        }
        throw new SessionsUnavailableError(`agent services ${this.describeFailure(error)}${tries}`, !repeatable && !notSent, { cause: error });
      }
      reloadToken = false;
      if (answer.status === 401) {
        // The platform may have rotated the token since the file was last read.
        if (!final) {
          reloadToken = true;
          continue;
        }
        throw new SessionsUnavailableError(`agent services refused the runtime's token (401)${tries}`, false);
      }
      if (answer.status === 429) {
        const waitMs = retryAfterMs(answer.retryAfter) ?? this.backoff(attempt);
        if (!final && waitMs <= this.maxRetryAfterMs) {
          await this.wait(waitMs);
          continue;
        }
        throw new SessionsUnavailableError(`agent services are limiting this agent's session requests (429)${tries}`, false);
      }
      if (answer.status >= 500) {
        if (!final && repeatable) {
          await this.wait(this.backoff(attempt));
          continue;
        }
        throw new SessionsUnavailableError(`agent services answered HTTP ${answer.status}${tries}`, !repeatable);
      }
      const { status, body: answered, etag } = answer;
      return etag === undefined ? { status, body: answered } : { status, body: answered, etag };
    }
  }

  /** Closes the kept connections; requests still running fail. */
  close(): void {
    this.agent.destroy();
  }

  private async exchange(method: Method, path: string, body: unknown, reloadToken: boolean, extraHeaders: Record<string, string>): Promise<RawAnswer> {
    const token = await (reloadToken ? this.options.token.reload() : this.options.token.current());
    const headers: OutgoingHttpHeaders = { ...extraHeaders, authorization: `Bearer ${token}`, accept: 'application/json' };
    const payload = body === undefined ? undefined : JSON.stringify(body);
    if (payload !== undefined) {
      headers['content-type'] = 'application/json';
      headers['content-length'] = Buffer.byteLength(payload);
    }
    return this.send(method, path, headers, payload);
  }

  /** One request and its whole answer, within the deadline; past it the request is destroyed, its connection with it. */
  private send(method: Method, path: string, headers: OutgoingHttpHeaders, payload: string | undefined): Promise<RawAnswer> {
    const { hostname, port, pathPrefix } = this.target;
    return new Promise((resolve, reject) => {
      const request = this.client.request({ hostname, port, path: pathPrefix + path, method, headers, agent: this.agent });
      const fail = (error: unknown) => {
        clearTimeout(deadline);
        request.destroy();
        reject(error);
      };
      const deadline = setTimeout(() => fail(new DeadlineError(`no answer within ${this.timeoutMs} ms`)), this.timeoutMs);
      // Errors after the answer was settled (the destroy above, a late reset) find the promise settled and change nothing.
      request.on('error', fail);
      request.on('response', (response) => {
        readBody(response, this.maxAnswerBytes).then((text) => {
          clearTimeout(deadline);
          resolve({ status: response.statusCode ?? 0, body: parseJson(text), retryAfter: response.headers['retry-after'] ?? null, etag: response.headers.etag });
        }, fail);
      });
      request.end(payload);
    });
  }

  private describeFailure(error: unknown): string {
    if (error instanceof DeadlineError) return `did not answer within ${this.timeoutMs} ms`;
    if (error instanceof AnswerTooLargeError) return `answered with a body larger than ${this.maxAnswerBytes} bytes`;
    const code = codeOf(error) ?? codeOf(error instanceof Error ? error.cause : undefined);
    return `could not be reached (${code ?? (error instanceof Error ? error.name : 'unknown error')})`;
  }

  private backoff(attempt: number): number {
    return this.backoffMs * 2 ** (attempt - 1);
  }
}

/** Whether every error code in the failure's causes says no connection was made. */
function wasNotSent(error: unknown): boolean {
  const codes: string[] = [];
  const collect = (value: unknown, depth: number): void => {
    if (typeof value !== 'object' || value === null || depth > 4) return;
    const { code, cause, errors } = value as { code?: unknown; cause?: unknown; errors?: unknown };
    if (typeof code === 'string') codes.push(code);
    collect(cause, depth + 1);
    if (Array.isArray(errors)) for (const inner of errors) collect(inner, depth + 1);
  };
  collect(error, 0);
  return codes.length > 0 && codes.every((code) => NOT_SENT_CODES.has(code));
}

function codeOf(value: unknown): string | undefined {
  return typeof value === 'object' && value !== null && 'code' in value ? String(value.code) : undefined;
}

/** The body as text, refused once it passes `maxBytes` (before reading any, when Content-Length says so). */
function readBody(response: IncomingMessage, maxBytes: number): Promise<string> {
  return new Promise((resolve, reject) => {
    if (Number(response.headers['content-length']) > maxBytes) {
      reject(new AnswerTooLargeError(`the answer declares ${response.headers['content-length']} bytes`));
      return;
    }
    const chunks: Buffer[] = [];
    let received = 0;
    response.on('data', (chunk: Buffer) => {
      received += chunk.length;
      // The caller destroys the request on this rejection, which stops the body.
      if (received > maxBytes) reject(new AnswerTooLargeError(`the answer passed ${maxBytes} bytes`));
      else chunks.push(chunk);
    });
    response.on('end', () => resolve(chunks.length === 1 ? chunks[0]!.toString('utf8') : Buffer.concat(chunks).toString('utf8')));
    // A connection lost mid-body: 'error' (ECONNRESET, "aborted") comes before 'close'.
    response.on('error', reject);
  });
}

/** Retry-After in seconds or as an HTTP date; undefined when absent or unreadable. */
function retryAfterMs(header: string | null): number | undefined {
  if (header === null) return undefined;
  if (/^\d+$/.test(header.trim())) return Number(header.trim()) * 1000;
  const at = Date.parse(header);
  return Number.isNaN(at) ? undefined : Math.max(at - Date.now(), 0);
}

function parseJson(text: string): unknown {
  try {
    return text === '' ? undefined : (JSON.parse(text) as unknown);
  } catch {
    return undefined;
  }
}
