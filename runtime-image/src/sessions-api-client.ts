import type { AgentServicesCalls, Answer, Method } from './agent-services-transport.js';
import { errorCodeOf, SessionsUnavailableError, SessionTooLargeError, SessionVersionConflictError } from './sessions-api-errors.js';

/** Which session and version a read or write left: the version to write at next, and the ETag agent services gave it. */
export interface SessionVersion {
  version: number;
  /** Absent from an agent services that sends none: then every read fetches the messages. */
  tag?: string;
}

/** A session as agent services hold it; version 0 and no messages for one that does not exist. */
export interface StoredSession<M> extends SessionVersion {
  messages: M[];
}

/** Sessions API v1 of agent services (docs/contract.md), as the session store uses it. */
export interface SessionsApi<M> {
  /** The session; `held`, when given, is what this replica holds of it, answered as is when still current (If-None-Match, 304). */
  get(id: string, held?: StoredSession<M>): Promise<StoredSession<M>>;
  /** Adds messages after the session's, if it is still at `expectedVersion` (0: it must not exist yet). Resolves with its new version. */
  append(id: string, expectedVersion: number, messages: readonly M[]): Promise<SessionVersion>;
  /** Replaces all of the session's messages, on the same condition. */
  replace(id: string, expectedVersion: number, messages: readonly M[]): Promise<SessionVersion>;
  delete(id: string): Promise<void>;
}

/**
 * Sessions API v1 over agent services calls (sent alone or batched, the answers are the
 * same): what each answer means. Messages are opaque JSON to agent services; this client
 * only carries them. Failures are the classes of sessions-api-errors.ts.
 */
export class SessionsApiClient<M> implements SessionsApi<M> {
  constructor(private readonly agentServices: AgentServicesCalls) {}

  async get(id: string, held?: StoredSession<M>): Promise<StoredSession<M>> {
    const answer = await this.agentServices.request('GET', sessionPath(id), undefined, held?.tag ? { 'if-none-match': held.tag } : {});
    if (answer.status === 404 && errorCodeOf(answer.body) === 'SESSION_NOT_FOUND') return { version: 0, messages: [] };
    if (answer.status === 304 && held && answer.etag === held.tag) return held;
    if (answer.status === 200 && isStoredSession(answer.body)) return { version: answer.body.version, messages: answer.body.messages as M[], tag: answer.etag };
    throw unexpected('GET', answer);
  }

  append(id: string, expectedVersion: number, messages: readonly M[]): Promise<SessionVersion> {
    return this.write('POST', `${sessionPath(id)}/messages`, expectedVersion, messages);
  }

  replace(id: string, expectedVersion: number, messages: readonly M[]): Promise<SessionVersion> {
    return this.write('PUT', sessionPath(id), expectedVersion, messages);
  }

  async delete(id: string): Promise<void> {
    const answer = await this.agentServices.request('DELETE', sessionPath(id));
    if (answer.status === 204 || (answer.status === 404 && errorCodeOf(answer.body) === 'SESSION_NOT_FOUND')) return;
    throw unexpected('DELETE', answer);
  }

  private async write(method: 'POST' | 'PUT', path: string, expectedVersion: number, messages: readonly M[]): Promise<SessionVersion> {
    const answer = await this.agentServices.request(method, path, { expected_version: expectedVersion, messages });
    const code = errorCodeOf(answer.body);
    if (answer.status === 200 && isVersioned(answer.body)) return { version: answer.body.version, tag: answer.etag };
    // The conflict's current_version is not read: the store reads the session again anyway, for its messages.
    if (answer.status === 409 && code === 'SESSION_VERSION_CONFLICT') throw new SessionVersionConflictError(`the session is past version ${expectedVersion}`);
    if (answer.status === 413 && code === 'SESSION_TOO_LARGE') throw new SessionTooLargeError('agent services refused the session as too large');
    throw unexpected(method, answer);
  }
}

function sessionPath(id: string): string {
  // "." and ".." would be read as path steps, not ids; the invoke route never lets them through.
  if (id === '.' || id === '..') throw new Error(`"${id}" cannot name a session in a URL path`);
  return `/v1/sessions/${encodeURIComponent(id)}`;
}

function unexpected(method: Method, answer: Answer): SessionsUnavailableError {
  const code = errorCodeOf(answer.body);
  const wrote = method === 'POST' || method === 'PUT';
  return new SessionsUnavailableError(
    `agent services answered ${method} with HTTP ${answer.status}${code ? ` ${code}` : ''}, which Sessions API v1 does not`,
    wrote && answer.status >= 200 && answer.status < 300,
  );
}

function isVersioned(body: unknown): body is { version: number } {
  const version = typeof body === 'object' && body !== null ? (body as { version?: unknown }).version : undefined;
  return typeof version === 'number' && Number.isInteger(version) && version >= 0;
}

function isStoredSession(body: unknown): body is { version: number; messages: unknown[] } {
  return isVersioned(body) && Array.isArray((body as { messages?: unknown }).messages);
}
