import { Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import fetch, { type Response } from 'node-fetch';
import { retry, type FailureKind } from '../../../contract/backoff.js';
import type { ApiEndpoint } from './settings.js';

/** A call Nomad or Consul answered with an error: `status` is theirs, the message is their body's text. */
export class ApiError extends Error {
  constructor(
    readonly api: string,
    readonly method: string,
    readonly path: string,
    readonly status: number,
    readonly body: string,
  ) {
    super(`${api} ${method} ${path}: ${status} ${body.trim().slice(0, 500) || '(no message)'}`);
    this.name = 'ApiError';
  }
}

/** No answer at all (connection refused, reset, timed out) after every attempt. */
export class ApiUnreachableError extends Error {
  constructor(readonly api: string, readonly method: string, readonly path: string, override readonly cause: unknown) {
    super(`${api} ${method} ${path}: unreachable (${cause instanceof Error ? cause.message : String(cause)})`);
    this.name = 'ApiUnreachableError';
  }
}

export interface RequestOptions {
  query?: Record<string, string | number | boolean | undefined>;
  body?: unknown;
  /** Overrides the client's timeout (a blocking query waits longer). */
  timeoutMs?: number;
  /** 404 resolves to null instead of throwing. */
  allowNotFound?: boolean;
  signal?: AbortSignal;
}

export interface ClientOptions {
  /** `Nomad` or `Consul`: names the API in errors. */
  api: string;
  tokenHeader: 'X-Nomad-Token' | 'X-Consul-Token';
  timeoutMs: number;
  attempts: number;
  /** The first back-off's ceiling; doubled per attempt, with full jitter (contract/backoff.ts). */
  backoffMs?: number;
  /**
   * Most connections open at once; further calls wait for a free one. Nomad and Consul
   * each refuse connections past a limit per client address (100 and 200 by default).
   */
  maxConnections: number;
}

export interface ApiResult<T> {
  body: T;
  headers: Response['headers'];
}

/**
 * Whether a call that failed may pass if made again. No answer (refused, reset, timed out)
 * and a 5xx may; so may a 429, Nomad's and Consul's answer to a client past its connection
 * limit (Nomad's command/agent/http.go, `connLimiter`), since the call did nothing. Other
 * 4xx answers will not change, nor will a job Nomad's validators refuse: they come as a
 * 500 (plain server errors are not coded: command/agent/http.go, `wrap`) whose body is a
 * go-multierror list, "1 error occurred:" (go-multierror `ListFormatFunc`), or, for a
 * registration whose EnforceIndex no longer matches, a plain "Enforcing job modify index …"
 * (nomad/structs/job.go, `RegisterEnforceIndexErrPrefix`), unlike "No cluster leader" and
 * other 5xx.
 */
function apiFailureKind(error: unknown): FailureKind {
  if (!(error instanceof ApiError) || error.status === 429) return 'transient';
  return error.status < 500 || refusedForGood(error.status, error.body) ? 'permanent' : 'transient';
}

const refusedForGood = (status: number, body: string) => status === 500 && (/^(rpc error: )?\d+ errors? occurred:/.test(body) || enforceIndexRefused(status, body));

/** nomad/structs/job.go, `RegisterEnforceIndexErrPrefix`: another registration or scale came between a read of the job and a write over it. */
export const enforceIndexRefused = (status: number, body: string) => status === 500 && /^(rpc error: )?Enforcing job modify index/.test(body);

/**
 * One HTTP API (Nomad or Consul): token header, TLS from the settings, a timeout per
 * request, a bounded pool of kept-alive connections, and bounded retries with
 * exponential back-off of the failures that may pass (`apiFailureKind`).
 */
export class ApiClient {
  private readonly agent: HttpAgent | HttpsAgent;

  constructor(private readonly endpoint: ApiEndpoint, private readonly options: ClientOptions) {
    const pool = { keepAlive: true, maxSockets: options.maxConnections, maxFreeSockets: options.maxConnections };
    this.agent = endpoint.address.startsWith('https:')
      ? new HttpsAgent({
        ...pool,
        ca: endpoint.ca ?? undefined,
        cert: endpoint.cert ?? undefined,
        key: endpoint.key ?? undefined,
        rejectUnauthorized: !endpoint.skipVerify,
      })
      : new HttpAgent(pool);
  }

  /** Closes the kept-alive connections (at shutdown). */
  close(): void {
    this.agent.destroy();
  }

  async json<T>(method: string, path: string, options: RequestOptions = {}): Promise<T> {
    return (await this.request<T>(method, path, options)).body;
  }

  async request<T>(method: string, path: string, options: RequestOptions = {}): Promise<ApiResult<T>> {
    const response = await this.send(method, path, options);
    const text = await response.text();
    if (response.status === 404) return { body: null as T, headers: response.headers }; // allowNotFound
    return { body: (text ? JSON.parse(text) : null) as T, headers: response.headers };
  }

  /** The raw response of a successful call, for streams (the fs logs API). */
  async stream(path: string, options: RequestOptions = {}): Promise<Response> {
    return this.send('GET', path, { ...options, allowNotFound: false });
  }

  /** A successful response (or a 404 with `allowNotFound`); an ApiError for any other answer, after the retries it deserves. */
  private async send(method: string, path: string, options: RequestOptions): Promise<Response> {
    const url = new URL(this.endpoint.address + path);
    for (const [key, value] of Object.entries(options.query ?? {})) if (value !== undefined) url.searchParams.set(key, String(value));
    const headers: Record<string, string> = { accept: 'application/json' };
    if (this.endpoint.token) headers[this.options.tokenHeader] = this.endpoint.token;
    if (options.body !== undefined) headers['content-type'] = 'application/json';
    const body = options.body === undefined ? undefined : JSON.stringify(options.body);
    const attempt = async () => {
      const timeout = AbortSignal.timeout(options.timeoutMs ?? this.options.timeoutMs);
      const signal = options.signal ? AbortSignal.any([timeout, options.signal]) : timeout;
      const response = await fetch(url, { method, headers, body, agent: this.agent, signal });
      if (response.ok || (response.status === 404 && options.allowNotFound)) return response;
      throw new ApiError(this.options.api, method, path, response.status, await response.text());
    };
    try {
      return await retry(attempt, {
        attempts: this.options.attempts,
        // The attempts bound the waits: no cap.
        backoff: { baseMs: this.options.backoffMs ?? 250, maxMs: Number.POSITIVE_INFINITY },
        // The caller gave up (its signal): no further attempt.
        classify: (error) => (options.signal?.aborted ? 'permanent' : apiFailureKind(error)),
        signal: options.signal,
      });
    } catch (error) {
      if (error instanceof ApiError || options.signal?.aborted) throw error;
      throw new ApiUnreachableError(this.options.api, method, path, error);
    }
  }
}

export const nomadClient = (endpoint: ApiEndpoint, timeoutMs: number, attempts: number, maxConnections: number) =>
  new ApiClient(endpoint, { api: 'Nomad', tokenHeader: 'X-Nomad-Token', timeoutMs, attempts, maxConnections });

export const consulClient = (endpoint: ApiEndpoint, timeoutMs: number, attempts: number, maxConnections: number) =>
  new ApiClient(endpoint, { api: 'Consul', tokenHeader: 'X-Consul-Token', timeoutMs, attempts, maxConnections });
