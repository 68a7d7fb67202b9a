import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface StoredFakeSession {
  version: number;
  messages: unknown[];
  /** Unix ms; with the version, the session's ETag, as agent services make it (control/domain/agent-session.ts, entityTagOf). */
  createdAt?: number;
}

/**
 * One request to the Sessions API, or one call inside a POST /v1/batch: the batch is recorded
 * as a request of its own (`calls` set), then each of its calls with the path it would have
 * had alone and `batched` set. HTTP requests are the records without `batched`.
 */
export interface RecordedSessionsRequest {
  method: string;
  path: string;
  authorization: string | undefined;
  /** What was answered. */
  status: number;
  /** A call inside a batch, not a request of its own. */
  batched?: true;
  /** A POST /v1/batch: how many calls it carried (0 when it was refused whole). */
  calls?: number;
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

/** Something to do to the next request (or call in a batch) instead of, or after, serving it. */
export type SessionsFault =
  | { status: number; code: string; retryAfter?: string }
  /** Serve the request (a write is applied), then answer `status` as if it had failed. */
  | { applyThenAnswer: number };

type FakeAnswer = { status: number; body?: unknown; headers?: Record<string, string> };

const SESSION_ID = /^[A-Za-z0-9._:-]{1,128}$/;
const TTL_MS = 24 * 3600 * 1000;
/** What a batch's body may hold beyond `maxBytes` (docs/contract.md, "Several calls in one request"). */
const BATCH_BODY_ALLOWANCE = 64 * 1024;
const MAX_BATCH_CALLS = 100;
/** The key of `failBatch`'s faults among those of each method. */
const BATCH_FAULTS = 'BATCH';

/**
 * A stand-in for the platform's agent services, Sessions API v1 only, until the control
 * API's own endpoint lands; then these tests should run against that instead. Strict on
 * purpose, so the runtime cannot lean on leniency the real one will not have: a bearer
 * token from the accepted set, ids of `[A-Za-z0-9._:-]{1,128}`, bodies of exactly
 * `{expected_version, messages}`, the version checked on every write (0: the session must
 * not exist; a mismatch is 409 with current_version), a write that would take the session
 * past `maxBytes` (its messages as one JSON array) refused with 413 and nothing written,
 * an unknown session 404 SESSION_NOT_FOUND. Error bodies are `{code, message, ...}`.
 *
 * POST /v1/batch is served as the contract says: the token checked once (401 for the whole),
 * the envelope checked (422), each call served as if alone, faults of `fail` included, and an
 * answer already holding `maxBytes` of session reads besides its first answers a further GET
 * 503 BATCH_ANSWER_FULL instead. With `batchSupported` false it is an unknown path (404), as to
 * an agent services from before it.
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
  /** Whether POST /v1/batch is served; false answers it 404 NOT_FOUND, as an unknown path. */
  batchSupported = true;
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

  /** Queues faults for the next calls of `method`, one each, in order, whether they come alone or in a batch. */
  fail(method: 'GET' | 'POST' | 'PUT' | 'DELETE', ...faults: SessionsFault[]): void {
    this.queueFaults(method, faults);
  }

  /** Queues faults for the next POST /v1/batch requests as a whole (`applyThenAnswer` serves all its calls). */
  failBatch(...faults: SessionsFault[]): void {
    this.queueFaults(BATCH_FAULTS, faults);
  }

  private queueFaults(key: string, faults: SessionsFault[]): void {
    this.faults.set(key, [...(this.faults.get(key) ?? []), ...faults]);
  }

  /** The calls (alone or batched) of one method and answer, to count retries and conflicts; batch requests are not calls. */
  answered(method: string, status: number): RecordedSessionsRequest[] {
    return this.requests.filter((request) => request.calls === undefined && request.method === method && request.status === status);
  }

  /** The POST /v1/batch requests received, each with how many calls it carried. */
  batches(): RecordedSessionsRequest[] {
    return this.requests.filter((request) => request.calls !== undefined);
  }

  /** The HTTP requests received: batches and calls alone, not the calls inside batches. */
  httpRequests(): RecordedSessionsRequest[] {
    return this.requests.filter((request) => !request.batched);
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
    const answer = path === '/v1/batch' ? this.serveBatch(request, text, record) : this.serveWithFaults(record.method, path, request.headers, text);
    record.status = answer.status;
    const headers = answer.headers ?? {};
    if (answer.body === undefined) response.writeHead(answer.status, headers).end();
    else response.writeHead(answer.status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(answer.body));
  }

  /** A call served as `serve` does, or the next fault queued for its method instead. */
  private serveWithFaults(method: string, path: string, headers: IncomingMessage['headers'], text: string): FakeAnswer {
    const fault = this.faults.get(method)?.shift();
    if (fault !== undefined && 'status' in fault) {
      return { status: fault.status, body: { code: fault.code, message: 'injected by the test' }, headers: fault.retryAfter === undefined ? {} : { 'retry-after': fault.retryAfter } };
    }
    const answer = this.serve(method, path, headers, text);
    if (fault !== undefined) return { status: fault.applyThenAnswer, body: { code: 'INTERNAL_ERROR', message: 'injected by the test after applying' } };
    return answer;
  }

  /** POST /v1/batch: each call answered as if alone, in order, within the answer's budget of messages. */
  private serveBatch(request: IncomingMessage, text: string, record: RecordedSessionsRequest): FakeAnswer {
    record.calls = 0;
    if (!this.batchSupported) return errorAnswer(404, 'NOT_FOUND');
    const token = /^Bearer (\S+)$/.exec(request.headers.authorization ?? '')?.[1];
    if (token === undefined || !this.tokens.has(token)) return { ...errorAnswer(401, 'UNAUTHENTICATED'), headers: { 'www-authenticate': 'Bearer' } };
    if (request.method !== 'POST') return errorAnswer(405, 'METHOD_NOT_ALLOWED');
    if (Buffer.byteLength(text) > this.maxBytes + BATCH_BODY_ALLOWANCE) return errorAnswer(413, 'SESSION_TOO_LARGE');
    if (!(request.headers['content-type'] ?? '').startsWith('application/json')) return errorAnswer(415, 'UNSUPPORTED_MEDIA_TYPE');
    const calls = parseBatch(text);
    if (calls === undefined) return errorAnswer(422, 'VALIDATION_ERROR');
    record.calls = calls.length;
    const whole = this.faults.get(BATCH_FAULTS)?.shift();
    if (whole !== undefined && 'status' in whole) return { ...errorAnswer(whole.status, whole.code), headers: whole.retryAfter === undefined ? {} : { 'retry-after': whole.retryAfter } };

    // As agent services do (batch-route.ts, withinAnswerBudget): the first session read is answered whatever its size, the others within maxBytes of answer together.
    let budget: number | undefined;
    const results = calls.map((call) => {
      const path = `/v1${call.path}`;
      const headers: IncomingMessage['headers'] = { authorization: request.headers.authorization, 'if-none-match': call.headers['if-none-match'] };
      if (call.body !== undefined) headers['content-type'] = 'application/json';
      let answer = this.serveWithFaults(call.method, path, headers, call.body === undefined ? '' : JSON.stringify(call.body));
      if (call.method === 'GET' && answer.status === 200) {
        const bytes = Buffer.byteLength(JSON.stringify(answer.body));
        if (budget === undefined) budget = this.maxBytes;
        else if (bytes > budget) answer = errorAnswer(503, 'BATCH_ANSWER_FULL');
        else budget -= bytes;
      }
      this.requests.push({ method: call.method, path, authorization: request.headers.authorization, status: answer.status, batched: true });
      return batchResult(answer);
    });
    if (whole !== undefined) return errorAnswer(whole.applyThenAnswer, 'INTERNAL_ERROR');
    return { status: 200, body: { results } };
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

  private serve(method: string, path: string, headers: IncomingMessage['headers'], text: string): FakeAnswer {
    const match = /^\/v1\/sessions\/([^/]+)(\/messages)?$/.exec(path);
    if (match === null) return errorAnswer(404, 'NOT_FOUND');
    const token = /^Bearer (\S+)$/.exec(headers.authorization ?? '')?.[1];
    if (token === undefined || !this.tokens.has(token)) return { ...errorAnswer(401, 'UNAUTHENTICATED'), headers: { 'www-authenticate': 'Bearer' } };
    const id = decodeURIComponent(match[1]!);
    if (!SESSION_ID.test(id)) return errorAnswer(400, 'INVALID_REQUEST');
    const route = `${method} ${match[2] ?? ''}`;
    const session = this.sessions.get(id);

    if (route === 'GET ') {
      if (!session) return errorAnswer(404, 'SESSION_NOT_FOUND');
      const etag = entityTag(session);
      // Agent services compare If-None-Match weakly and take exactly one tag (session-routes.ts, sessionTagOf).
      if (headers['if-none-match']?.replace(/^W\//, '') === etag) return { status: 304, headers: { etag } };
      return { status: 200, body: this.describe(id, session, true), headers: { etag } };
    }
    if (route === 'DELETE ') {
      if (!session) return errorAnswer(404, 'SESSION_NOT_FOUND');
      this.sessions.delete(id);
      return { status: 204 };
    }
    if (route !== 'POST /messages' && route !== 'PUT ') return errorAnswer(405, 'METHOD_NOT_ALLOWED');

    const write = parseWrite(headers, text, route === 'POST /messages');
    if (write === undefined) return errorAnswer(400, 'INVALID_REQUEST');
    const current = session?.version ?? 0;
    if (write.expected_version !== current) return errorAnswer(409, 'SESSION_VERSION_CONFLICT', { current_version: current });
    const messages = route === 'PUT ' ? write.messages : [...(session?.messages ?? []), ...write.messages];
    if (Buffer.byteLength(JSON.stringify(messages)) > this.maxBytes) return errorAnswer(413, 'SESSION_TOO_LARGE');
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

function errorAnswer(status: number, code: string, extra: Record<string, unknown> = {}): FakeAnswer {
  return { status, body: { code, message: code.toLowerCase().replace(/_/g, ' '), ...extra } };
}

/** A call's answer as a batch's result: its status, its ETag and Retry-After headers, its body. */
function batchResult({ status, headers = {}, body }: FakeAnswer): { status: number; headers?: Record<string, string>; body?: unknown } {
  const kept = Object.fromEntries(Object.entries(headers).filter(([name]) => name === 'etag' || name === 'retry-after'));
  return { status, ...(Object.keys(kept).length > 0 ? { headers: kept } : {}), ...(body === undefined ? {} : { body }) };
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

interface BatchedCall {
  method: string;
  path: string;
  headers: { 'if-none-match'?: string };
  body?: unknown;
}

/**
 * `{calls}` of 1 to 100 `{method, path, headers?, body?}`, `headers` holding at most
 * `if-none-match`, nothing else (control/schemas/agent-services-batch.ts); undefined for any other body.
 */
function parseBatch(text: string): BatchedCall[] | undefined {
  let envelope: unknown;
  try {
    envelope = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (!isPlainObject(envelope) || Object.keys(envelope).join() !== 'calls') return undefined;
  const { calls } = envelope;
  if (!Array.isArray(calls) || calls.length < 1 || calls.length > MAX_BATCH_CALLS) return undefined;
  const parsed: BatchedCall[] = [];
  for (const call of calls) {
    if (!isPlainObject(call) || Object.keys(call).some((key) => !['method', 'path', 'headers', 'body'].includes(key))) return undefined;
    const { method, path, headers = {}, body } = call;
    if (typeof method !== 'string' || method.length < 1 || method.length > 16 || typeof path !== 'string' || path.length < 1 || path.length > 1024) return undefined;
    if (!isPlainObject(headers) || Object.keys(headers).some((name) => name !== 'if-none-match') || !['string', 'undefined'].includes(typeof headers['if-none-match'])) return undefined;
    parsed.push({ method, path, headers: headers as BatchedCall['headers'], ...(body === undefined ? {} : { body }) });
  }
  return parsed;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

async function readText(request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of request as AsyncIterable<Buffer>) chunks.push(chunk);
  return Buffer.concat(chunks).toString('utf8');
}
