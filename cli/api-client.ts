import { ApiRefused, Unreachable, UsageError } from './errors.js';
import { readEvents, type ServerEvent } from './event-stream.js';

/** How long an ordinary request may take; streams have none (they are followed until they end). */
const REQUEST_DEADLINE_MS = 30_000;

export interface RequestOptions {
  body?: unknown;
  query?: Record<string, string | number | boolean | undefined>;
  headers?: Record<string, string>;
  /**
   * About the user, not the account in use: sent without X-Account-Id. The API refuses any
   * request naming an account the user has left (403), so the commands that list, choose
   * and join accounts must still work for a user removed from the one in use.
   */
  asUser?: boolean;
}

/** The control API over HTTP: JSON in and out, its errors as ApiRefused, no answer as Unreachable. */
export class ApiClient {
  /** `accountId`: the account every request acts in (X-Account-Id); none: the user's default account. */
  constructor(readonly baseUrl: string, private readonly token: string | undefined, private readonly accountId?: string) {}

  async request<T>(method: string, path: string, options: RequestOptions = {}): Promise<T> {
    const response = await this.send(method, path, options, AbortSignal.timeout(REQUEST_DEADLINE_MS));
    const text = await response.text();
    if (!response.ok) throw this.refusalOf(response.status, text, options);
    return (text ? JSON.parse(text) : undefined) as T;
  }

  /** Follows a server-sent event stream of the API until it ends or `signal` aborts. */
  async *events(path: string, options: RequestOptions = {}, signal?: AbortSignal): AsyncIterable<ServerEvent> {
    const response = await this.send('GET', path, { ...options, headers: { accept: 'text/event-stream', ...options.headers } }, signal);
    if (!response.ok || !response.body) throw this.refusalOf(response.status, await response.text(), options);
    yield* readEvents(response.body);
  }

  /**
   * The API's refusal. One of the account in use (its user removed from it: the API's
   * `details.header` names X-Account-Id) also says how to pick another, since every command
   * of the context is refused alike until then.
   */
  private refusalOf(status: number, text: string, options: RequestOptions): ApiRefused {
    const refused = refusal(status, text);
    if (status === 403 && this.accountId && !options.asUser && refused.details['header'] === 'X-Account-Id') {
      refused.message += ` (the account in use is ${this.accountId}: agentctl accounts list shows yours, agentctl accounts use <account> picks one)`;
    }
    return refused;
  }

  private async send(method: string, path: string, options: RequestOptions, signal: AbortSignal | undefined): Promise<Response> {
    // A `.` or `..` a user typed as a name (`keys revoke bot ..`) survives encodeURIComponent,
    // and a URL reads it as a step up: DELETE …/access-keys/.. would delete the agent. Every
    // command's path is held to it here, whichever forgot pathSegment().
    const segments = path.split('?')[0]!.split('/');
    if (segments.some((segment, i) => i > 0 && (segment === '.' || segment === '..' || (segment === '' && i < segments.length - 1)))) {
      throw new UsageError(`refusing to send ${method} ${path}: a name of ".", ".." or nothing is no name`);
    }
    const url = new URL(this.baseUrl + path);
    for (const [name, value] of Object.entries(options.query ?? {})) if (value !== undefined) url.searchParams.set(name, String(value));
    const headers: Record<string, string> = { accept: 'application/json', ...options.headers };
    if (this.token) headers.authorization = `Bearer ${this.token}`;
    if (this.accountId && !options.asUser) headers['x-account-id'] = this.accountId;
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
    const body = JSON.parse(text) as { code?: unknown; message?: unknown; details?: unknown };
    if (typeof body.code === 'string' && typeof body.message === 'string') {
      const details = typeof body.details === 'object' && body.details !== null && !Array.isArray(body.details) ? (body.details as Record<string, unknown>) : {};
      return new ApiRefused(status, body.code, body.message, details);
    }
  } catch {
    // not the API's error body: described below
  }
  return new ApiRefused(status, `HTTP_${status}`, text.trim().slice(0, 200) || 'no body');
}

/**
 * `value`, a word the user typed (a session id), as one segment of a request path. Empty, `.`
 * and `..` are none: a URL reads the dots as steps, so `…/sessions/..` would name the agent
 * itself. They are bad usage (exit 2), refused before any request.
 */
export function pathSegment(value: string, what: string): string {
  if (value === '' || value === '.' || value === '..') throw new UsageError(`${JSON.stringify(value)} is no ${what}`);
  return encodeURIComponent(value);
}
