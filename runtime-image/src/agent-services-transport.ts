import { setTimeout as sleep } from 'node:timers/promises';
import { TokenFileError, type TokenSource } from './bearer-token-file.js';
import type { Fetch } from './language-model.js';
import { SessionsUnavailableError } from './sessions-api-errors.js';

export type Method = 'GET' | 'POST' | 'PUT' | 'DELETE';

/** An answer agent services gave, other than the ones the transport deals with itself (401, 429, 5xx). */
export interface Answer {
  status: number;
  /** The parsed JSON body; undefined when there was none or it was not JSON. */
  body: unknown;
}

export interface TransportOptions {
  /** AGENT_SERVICES_URL, without a trailing slash. */
  baseUrl: string;
  token: TokenSource;
  /** Node's fetch keeps connections alive between requests (undici's pool), so a call costs no new connection. */
  fetch: Fetch;
  /** Deadline of one request, its answer's body included. */
  timeoutMs?: number;
  /** Tries of one call, the first included. */
  attempts?: number;
  /** First pause between tries, doubled each time. */
  backoffMs?: number;
  /** A 429 asking for a longer wait than this fails at once: a caller is waiting. */
  maxRetryAfterMs?: number;
  wait?: (ms: number) => Promise<unknown>;
}

/**
 * Tight on purpose: the caller of /invoke waits through all of it, and a store that does
 * not answer within seconds is better reported than waited for.
 */
export const TRANSPORT_DEFAULTS = { timeoutMs: 2000, attempts: 3, backoffMs: 50, maxRetryAfterMs: 1000 } as const;

// Failures before a request leaves this process, after which even a write can be sent again.
const NOT_SENT_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'UND_ERR_CONNECT_TIMEOUT']);

/**
 * One call to agent services: the bearer token, a deadline, bounded retries. Reads and
 * deletes are tried again after any failure; writes only after one that surely did not
 * apply them (no connection made, 401, 429), since a write sent twice could add a turn
 * twice. What is left after the tries is a SessionsUnavailableError, with
 * `mayHaveCommitted` when a write's outcome is unknown.
 */
export class AgentServicesTransport {
  private readonly timeoutMs: number;
  private readonly attempts: number;
  private readonly backoffMs: number;
  private readonly maxRetryAfterMs: number;
  private readonly wait: (ms: number) => Promise<unknown>;

  constructor(private readonly options: TransportOptions) {
    this.timeoutMs = options.timeoutMs ?? TRANSPORT_DEFAULTS.timeoutMs;
    this.attempts = options.attempts ?? TRANSPORT_DEFAULTS.attempts;
    this.backoffMs = options.backoffMs ?? TRANSPORT_DEFAULTS.backoffMs;
    this.maxRetryAfterMs = options.maxRetryAfterMs ?? TRANSPORT_DEFAULTS.maxRetryAfterMs;
    this.wait = options.wait ?? sleep;
  }

  async request(method: Method, path: string, body?: unknown): Promise<Answer> {
    const repeatable = method === 'GET' || method === 'DELETE';
    let reloadToken = false;
    for (let attempt = 1; ; attempt += 1) {
      const final = attempt >= this.attempts;
      const tries = attempt > 1 ? ` after ${attempt} tries` : '';
      let answer: Answer & { retryAfter: string | null };
      try {
        answer = await this.exchange(method, path, body, reloadToken);
      } catch (error) {
        if (error instanceof TokenFileError) throw new SessionsUnavailableError(error.message, false, { cause: error });
        const notSent = wasNotSent(error);
        if (!final && (repeatable || notSent)) {
          await this.wait(this.backoff(attempt));
          continue;
        }
        throw new SessionsUnavailableError(`agent services ${transportFailure(error, this.timeoutMs)}${tries}`, !repeatable && !notSent, { cause: error });
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
      return { status: answer.status, body: answer.body };
    }
  }

  private async exchange(method: Method, path: string, body: unknown, reloadToken: boolean) {
    const token = await (reloadToken ? this.options.token.reload() : this.options.token.current());
    const headers: Record<string, string> = { authorization: `Bearer ${token}`, accept: 'application/json' };
    if (body !== undefined) headers['content-type'] = 'application/json';
    const response = await this.options.fetch(`${this.options.baseUrl}${path}`, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(this.timeoutMs),
    });
    const text = await response.text();
    return { status: response.status, body: parseJson(text), retryAfter: response.headers.get('retry-after') };
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

function transportFailure(error: unknown, timeoutMs: number): string {
  if (error instanceof Error && error.name === 'TimeoutError') return `did not answer within ${timeoutMs} ms`;
  const cause = error instanceof Error ? error.cause : undefined;
  const code = typeof cause === 'object' && cause !== null && 'code' in cause ? String(cause.code) : undefined;
  return `could not be reached (${code ?? (error instanceof Error ? error.name : 'unknown error')})`;
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
