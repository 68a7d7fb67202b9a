import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface StoredFakeSession {
  version: number;
  messages: unknown[];
  /** Unix ms; with the version, the session's ETag, as agent services make it (control/domain/agent-session.ts, entityTagOf). */
  createdAt?: number;
}

export interface RecordedSessionsRequest {
  method: string;
  path: string;
  authorization: string | undefined;
  /** What was answered. */
  status: number;
}

/** One OTLP/HTTP export the runtime sent to POST /v1/traces. */
export interface RecordedTraceExport {
  authorization: string | undefined;
  contentType: string | undefined;
  /** The body as sent, to search for text that must not be there. */
  text: string;
  // An ExportTraceServiceRequest in OTLP JSON; tests read the fields they know.
  body: any;
}

/** How POST /v1/traces answers: 200 `{}` by default. */
export type TracesBehaviour = { accept: true; rejectedSpans?: number } | { status: number } | { hang: true };

/** Something to do to the next request instead of, or after, serving it. */
export type SessionsFault =
  | { status: number; code: string; retryAfter?: string }
  /** Serve the request (a write is applied), then answer `status` as if it had failed. */
  | { applyThenAnswer: number };

const SESSION_ID = /^[A-Za-z0-9._:-]{1,128}$/;
const TTL_MS = 24 * 3600 * 1000;

/**
 * A stand-in for the platform's agent services, Sessions API v1 only, until the control
 * API's own endpoint lands; then these tests should run against that instead. Strict on
 * purpose, so the runtime cannot lean on leniency the real one will not have: a bearer
 * token from the accepted set, ids of `[A-Za-z0-9._:-]{1,128}`, bodies of exactly
 * `{expected_version, messages}`, the version checked on every write (0: the session must
 * not exist; a mismatch is 409 with current_version), a write that would take the session
 * past `maxBytes` (its messages as one JSON array) refused with 413 and nothing written,
 * an unknown session 404 SESSION_NOT_FOUND. Error bodies are `{code, message, ...}`.
 */
export class FakeAgentServices {
  readonly sessions = new Map<string, StoredFakeSession>();
  readonly requests: RecordedSessionsRequest[] = [];
  readonly tokens = new Set<string>();
  /** Trace exports received, in order (kept apart from `requests`, which are the Sessions API's). */
  readonly traceExports: RecordedTraceExport[] = [];
  traces: TracesBehaviour = { accept: true };
  /** Trace exports left unanswered under `{hang: true}`. */
  tracesHeld = 0;
  maxBytes = 1_048_576;
  private readonly faults = new Map<string, SessionsFault[]>();

  private constructor(
    private readonly server: Server,
    readonly url: string,
  ) {}

  static async start(tokens: string[]): Promise<FakeAgentServices> {
    let fake: FakeAgentServices | undefined;
    const server = createServer((request, response) => void fake?.handle(request, response));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    fake = new FakeAgentServices(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    for (const token of tokens) fake.tokens.add(token);
    return fake;
  }

  /** Queues faults for the next requests of `method`, one each, in order. */
  fail(method: 'GET' | 'POST' | 'PUT' | 'DELETE', ...faults: SessionsFault[]): void {
    this.faults.set(method, [...(this.faults.get(method) ?? []), ...faults]);
  }

  /** The requests of one method and answer, to count retries and conflicts. */
  answered(method: string, status: number): RecordedSessionsRequest[] {
    return this.requests.filter((request) => request.method === method && request.status === status);
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const text = await readText(request);
    const path = new URL(request.url ?? '/', 'http://fake').pathname;
    if (path === '/v1/traces') {
      this.serveTraces(request, response, text);
      return;
    }
    const record: RecordedSessionsRequest = { method: request.method ?? '', path, authorization: request.headers.authorization, status: 0 };
    this.requests.push(record);
    const send = (status: number, body?: unknown, headers: Record<string, string> = {}) => {
      record.status = status;
      if (body === undefined) response.writeHead(status, headers).end();
      else response.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body));
    };

    const fault = this.faults.get(record.method)?.shift();
    if (fault !== undefined && 'status' in fault) {
      send(fault.status, { code: fault.code, message: 'injected by the test' }, fault.retryAfter === undefined ? {} : { 'retry-after': fault.retryAfter });
      return;
    }
    const answer = this.serve(request.method ?? '', path, request.headers, text);
    if (fault !== undefined) send(fault.applyThenAnswer, { code: 'INTERNAL_ERROR', message: 'injected by the test after applying' });
    else send(answer.status, answer.body, answer.headers);
  }

  /** The OTLP/HTTP JSON receiver beside the Sessions API, with the same bearer tokens. */
  private serveTraces(request: IncomingMessage, response: ServerResponse, text: string): void {
    const behaviour = this.traces;
    if ('hang' in behaviour) {
      this.tracesHeld += 1;
      return;
    }
    if ('status' in behaviour) {
      response.writeHead(behaviour.status, { 'content-type': 'application/json' }).end('{"code":"INJECTED","message":"injected by the test"}');
      return;
    }
    const token = /^Bearer (\S+)$/.exec(request.headers.authorization ?? '')?.[1];
    if (request.method !== 'POST' || token === undefined || !this.tokens.has(token)) {
      response.writeHead(request.method !== 'POST' ? 405 : 401).end();
      return;
    }
    this.traceExports.push({ authorization: request.headers.authorization, contentType: request.headers['content-type'], text, body: JSON.parse(text) });
    const body = behaviour.rejectedSpans ? { partialSuccess: { rejectedSpans: String(behaviour.rejectedSpans), errorMessage: 'injected by the test' } } : {};
    response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  }

  /** Every span received, with its resource's attributes. */
  spans(): any[] {
    return this.traceExports.flatMap((entry) => entry.body.resourceSpans.flatMap((rs: any) => rs.scopeSpans.flatMap((ss: any) => ss.spans)));
  }

  private serve(method: string, path: string, headers: IncomingMessage['headers'], text: string): { status: number; body?: unknown; headers?: Record<string, string> } {
    const error = (status: number, code: string, extra: Record<string, unknown> = {}) => ({ status, body: { code, message: code.toLowerCase().replace(/_/g, ' '), ...extra } });
    const match = /^\/v1\/sessions\/([^/]+)(\/messages)?$/.exec(path);
    if (match === null) return error(404, 'NOT_FOUND');
    const token = /^Bearer (\S+)$/.exec(headers.authorization ?? '')?.[1];
    if (token === undefined || !this.tokens.has(token)) return { ...error(401, 'UNAUTHENTICATED'), headers: { 'www-authenticate': 'Bearer' } };
    const id = decodeURIComponent(match[1]!);
    if (!SESSION_ID.test(id)) return error(400, 'INVALID_REQUEST');
    const route = `${method} ${match[2] ?? ''}`;
    const session = this.sessions.get(id);

    if (route === 'GET ') {
      if (!session) return error(404, 'SESSION_NOT_FOUND');
      const etag = entityTag(session);
      // Agent services compare If-None-Match weakly and take exactly one tag (session-routes.ts, sessionTagOf).
      if (headers['if-none-match']?.replace(/^W\//, '') === etag) return { status: 304, headers: { etag } };
      return { status: 200, body: this.describe(id, session, true), headers: { etag } };
    }
    if (route === 'DELETE ') {
      if (!session) return error(404, 'SESSION_NOT_FOUND');
      this.sessions.delete(id);
      return { status: 204 };
    }
    if (route !== 'POST /messages' && route !== 'PUT ') return error(405, 'METHOD_NOT_ALLOWED');

    const write = parseWrite(headers, text, route === 'POST /messages');
    if (write === undefined) return error(400, 'INVALID_REQUEST');
    const current = session?.version ?? 0;
    if (write.expected_version !== current) return error(409, 'SESSION_VERSION_CONFLICT', { current_version: current });
    const messages = route === 'PUT ' ? write.messages : [...(session?.messages ?? []), ...write.messages];
    if (Buffer.byteLength(JSON.stringify(messages)) > this.maxBytes) return error(413, 'SESSION_TOO_LARGE');
    const stored = { version: current + 1, messages, createdAt: session?.createdAt ?? Date.now() };
    this.sessions.set(id, stored);
    return { status: 200, body: this.describe(id, stored, false), headers: { etag: entityTag(stored) } };
  }

  private describe(id: string, session: StoredFakeSession, withMessages: boolean) {
    return {
      session_id: id,
      version: session.version,
      ...(withMessages ? { messages: session.messages } : {}),
      size_bytes: Buffer.byteLength(JSON.stringify(session.messages)),
      expires_at: new Date(Date.now() + TTL_MS).toISOString(),
    };
  }
}

const entityTag = (session: StoredFakeSession) => `"${session.version}.${session.createdAt ?? 0}"`;

/** `{expected_version, messages}` and nothing else, as JSON; an append of no messages is refused. */
function parseWrite(headers: IncomingMessage['headers'], text: string, append: boolean): { expected_version: number; messages: unknown[] } | undefined {
  if (!(headers['content-type'] ?? '').startsWith('application/json')) return undefined;
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return undefined;
  const { expected_version: version, messages, ...rest } = body as Record<string, unknown>;
  if (Object.keys(rest).length > 0 || !Number.isInteger(version) || (version as number) < 0 || !Array.isArray(messages)) return undefined;
  if (append && messages.length === 0) return undefined;
  return { expected_version: version as number, messages };
}

async function readText(request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of request as AsyncIterable<Buffer>) chunks.push(chunk);
  return Buffer.concat(chunks).toString('utf8');
}
