import { ApiRefused, Unreachable } from './errors.js';
import { readEvents, type ServerEvent } from './event-stream.js';

/** How long an ordinary request may take; streams have none (they are followed until they end). */
const REQUEST_DEADLINE_MS = 30_000;

export interface RequestOptions {
  body?: unknown;
  query?: Record<string, string | number | boolean | undefined>;
  headers?: Record<string, string>;
}

/** The control API over HTTP: JSON in and out, its errors as ApiRefused, no answer as Unreachable. */
export class ApiClient {
  constructor(readonly baseUrl: string, private readonly token: string | undefined) {}

  async request<T>(method: string, path: string, options: RequestOptions = {}): Promise<T> {
    const response = await this.send(method, path, options, AbortSignal.timeout(REQUEST_DEADLINE_MS));
    const text = await response.text();
    if (!response.ok) throw refusal(response.status, text);
    return (text ? JSON.parse(text) : undefined) as T;
  }

  /** Follows a server-sent event stream of the API until it ends or `signal` aborts. */
  async *events(path: string, options: RequestOptions = {}, signal?: AbortSignal): AsyncIterable<ServerEvent> {
    const response = await this.send('GET', path, { ...options, headers: { accept: 'text/event-stream', ...options.headers } }, signal);
    if (!response.ok || !response.body) throw refusal(response.status, await response.text());
    yield* readEvents(response.body);
  }

  private async send(method: string, path: string, options: RequestOptions, signal: AbortSignal | undefined): Promise<Response> {
    const url = new URL(this.baseUrl + path);
    for (const [name, value] of Object.entries(options.query ?? {})) if (value !== undefined) url.searchParams.set(name, String(value));
    const headers: Record<string, string> = { accept: 'application/json', ...options.headers };
    if (this.token) headers.authorization = `Bearer ${this.token}`;
    let body: string | undefined;
    if (options.body !== undefined) {
      body = JSON.stringify(options.body);
      headers['content-type'] = 'application/json';
    }
    try {
      return await fetch(url, { method, headers, body, signal });
    } catch (error) {
      throw new Unreachable(this.baseUrl, error);
    }
  }
}

/** The API's `{code, message}` when the body is one (docs/contract.md, "Errors"); else the status and the start of the text. */
export function refusal(status: number, text: string): ApiRefused {
  try {
    const body = JSON.parse(text) as { code?: unknown; message?: unknown };
    if (typeof body.code === 'string' && typeof body.message === 'string') return new ApiRefused(status, body.code, body.message);
  } catch {
    // not the API's error body: described below
  }
  return new ApiRefused(status, `HTTP_${status}`, text.trim().slice(0, 200) || 'no body');
}
