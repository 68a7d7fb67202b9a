import type { AgentServicesCalls, Answer, Method, RawAnswer } from './agent-services-transport.js';
import { errorCodeOf, SessionsUnavailableError } from './sessions-api-errors.js';

/** How BatchedCalls groups calls. */
export interface BatchLimits {
  /** Requests (calls alone and batches) on their way at once; a call made while this many are waits for the next batch. */
  maxInFlight: number;
  /** Calls in one batch at most (POST /v1/batch takes 1 to 100). */
  maxCalls: number;
  /** The most of the calls' bodies, as JSON text, one batch carries; a call whose body alone is larger goes alone. */
  maxBodyBytes: number;
}

/**
 * Two requests on their way: calls that come meanwhile wait for one answer at most. 64 KiB
 * of bodies is what agent services take in one request beyond SESSION_MAX_BYTES, so a batch
 * is refused as too large (413, then sent call by call) only where SESSION_MAX_BYTES is set
 * near its least; a turn is a few KiB, so tens of them still go together.
 */
export const BATCH_LIMITS: BatchLimits = { maxInFlight: 2, maxCalls: 100, maxBodyBytes: 64 * 1024 };

interface WaitingCall {
  method: Method;
  path: string;
  body: unknown;
  headers: Record<string, string>;
  /** Which session the call is of: two calls of one session never share a batch. */
  session: string;
  bodyBytes: number;
  resolve: (answer: Answer | Promise<Answer>) => void;
  reject: (error: unknown) => void;
}

/** A call in POST /v1/batch: its path under /v1, written without it. */
interface BatchCall {
  method: string;
  path: string;
  headers?: Record<string, string>;
  body?: unknown;
}

/**
 * Agent services calls made at once, sent in fewer requests (docs/contract.md, "Several
 * calls in one request"). A call made while fewer than `maxInFlight` requests are on their
 * way goes at once, with whatever calls wait; one made while that many are waits, and goes
 * with the others that came meanwhile in the next batch. A call that waited for no other
 * goes alone on its own endpoint, so a replica serving one conversation at a time sends what
 * it sent before; fifty conversations at once cost a few requests instead of fifty.
 *
 * Each call is answered as the transport would have answered it alone: a result that the
 * transport deals with itself (401, 429, a read's 5xx, an answer that did not fit the batch)
 * sends the call again alone through it, and a write left unknown fails as the transport
 * fails it, with `mayHaveCommitted`, so the session store reads back whether it landed.
 * An agent services without /v1/batch (404, 405) turns batching off for good.
 */
export class BatchedCalls implements AgentServicesCalls {
  private waiting: WaitingCall[] = [];
  private inFlight = 0;
  private batchEndpointAvailable = true;

  constructor(
    private readonly transport: AgentServicesCalls,
    private readonly limits: BatchLimits = BATCH_LIMITS,
  ) {}

  request(method: Method, path: string, body?: unknown, headers: Record<string, string> = {}, earlier?: RawAnswer): Promise<Answer> {
    const session = batchableSession(method, path);
    if (!this.batchEndpointAvailable || session === undefined || earlier !== undefined) {
      return this.transport.request(method, path, body, headers, earlier);
    }
    return new Promise<Answer>((resolve, reject) => {
      const bodyBytes = body === undefined ? 0 : Buffer.byteLength(JSON.stringify(body));
      this.waiting.push({ method, path, body, headers, session, bodyBytes, resolve, reject });
      this.startRequests();
    });
  }

  private startRequests(): void {
    while (this.inFlight < this.limits.maxInFlight && this.waiting.length > 0) {
      const calls = this.takeCalls();
      this.inFlight += 1;
      const sent = calls.length === 1 ? this.sendAlone(calls[0]!) : this.sendBatch(calls);
      void sent.finally(() => {
        this.inFlight -= 1;
        this.startRequests();
      });
    }
  }

  /** The next request's calls, in the order they came: at least one, however large. */
  private takeCalls(): WaitingCall[] {
    const taken: WaitingCall[] = [];
    const left: WaitingCall[] = [];
    // Calls of one batch run in no order: a session's later call waits for the next request, behind its earlier one.
    const sessionsSeen = new Set<string>();
    let bodyBytes = 0;
    for (const call of this.waiting) {
      const fits =
        taken.length === 0 ||
        (taken.length < this.limits.maxCalls && bodyBytes + call.bodyBytes <= this.limits.maxBodyBytes && !sessionsSeen.has(call.session));
      sessionsSeen.add(call.session);
      if (fits) {
        taken.push(call);
        bodyBytes += call.bodyBytes;
      } else {
        left.push(call);
      }
    }
    this.waiting = left;
    return taken;
  }

  /**
   * Sends the call as a request of its own; resolves, never rejects, once it is answered.
   * With `earlier`, its answer in a batch, the transport takes that as the call's first try.
   */
  private sendAlone(call: WaitingCall, earlier?: RawAnswer): Promise<unknown> {
    const answer = this.transport.request(call.method, call.path, call.body, call.headers, earlier);
    call.resolve(answer);
    return answer.catch(() => {});
  }

  /** Sends the calls as one POST /v1/batch and settles each with its result; resolves, never rejects, once answered. */
  private async sendBatch(calls: WaitingCall[]): Promise<void> {
    let answer: Answer;
    try {
      answer = await this.transport.request('POST', '/v1/batch', { calls: calls.map(toBatchCall) });
    } catch (error) {
      // The transport tried what it could; a read may still go alone, a write's error already says whether it may have landed.
      for (const call of calls) {
        if (call.method === 'GET') void this.sendAlone(call);
        else call.reject(error);
      }
      return;
    }
    if (answer.status === 404 || answer.status === 405) {
      // An agent services from before /v1/batch: every call from now on goes alone.
      this.batchEndpointAvailable = false;
      for (const call of [...calls, ...this.waiting.splice(0)]) void this.sendAlone(call);
      return;
    }
    if (answer.status >= 400 && answer.status < 500) {
      // Refused whole (413 too large, 422): none of its calls was applied.
      for (const call of calls) void this.sendAlone(call);
      return;
    }
    const results = answer.status === 200 ? resultsOf(answer.body, calls.length) : undefined;
    if (results === undefined) {
      const unknown = new SessionsUnavailableError(`agent services answered a batch of calls with HTTP ${answer.status} and a body Sessions API v1 does not give`, true);
      for (const call of calls) {
        if (call.method === 'GET') void this.sendAlone(call);
        else call.reject(unknown);
      }
      return;
    }
    calls.forEach((call, index) => this.settle(call, results[index]!));
  }

  /**
   * Answers the call with its result, as the transport would have answered it alone. A result
   * the transport deals with (401, 429, 5xx) goes to it as the call's first try: a 429 waits
   * its Retry-After, or fails at once when that is too long; a read's 5xx is tried again after
   * a pause; a write's 5xx fails with `mayHaveCommitted`. A read that did not fit the batch's
   * answer (503 BATCH_ANSWER_FULL) failed nothing and goes alone at once.
   */
  private settle(call: WaitingCall, result: RawAnswer): void {
    if (result.status === 503 && errorCodeOf(result.body) === 'BATCH_ANSWER_FULL') void this.sendAlone(call);
    else if (result.status === 401 || result.status === 429 || result.status >= 500) void this.sendAlone(call, result);
    else call.resolve(withoutRetryAfter(result));
  }
}

/**
 * The session of a call that may go in a batch: a session's GET or a POST of its messages,
 * the two calls of every invoke. The others (a trim's PUT, a DELETE) are rare and go alone.
 */
function batchableSession(method: Method, path: string): string | undefined {
  const [, session, messages] = /^\/v1\/sessions\/([^/]+)(\/messages)?$/.exec(path) ?? [];
  if (method === 'GET' && messages === undefined) return session;
  if (method === 'POST' && messages !== undefined) return session;
  return undefined;
}

function toBatchCall(call: WaitingCall): BatchCall {
  const batchCall: BatchCall = { method: call.method, path: call.path.slice('/v1'.length) };
  if (Object.keys(call.headers).length > 0) batchCall.headers = call.headers;
  if (call.body !== undefined) batchCall.body = call.body;
  return batchCall;
}

/** The answers of a 200 `{results}` with one result per call, each with an integer status; undefined for any other body. */
function resultsOf(body: unknown, calls: number): RawAnswer[] | undefined {
  const results = isObject(body) ? body['results'] : undefined;
  if (!Array.isArray(results) || results.length !== calls) return undefined;
  const answers: RawAnswer[] = [];
  for (const result of results) {
    if (!isObject(result) || !Number.isInteger(result['status'])) return undefined;
    const headers = isObject(result['headers']) ? result['headers'] : {};
    const retryAfter = headers['retry-after'];
    const answer: RawAnswer = { status: result['status'] as number, body: result['body'], retryAfter: typeof retryAfter === 'string' ? retryAfter : null };
    if (typeof headers['etag'] === 'string') answer.etag = headers['etag'];
    answers.push(answer);
  }
  return answers;
}

/** The answer as the transport gives one it does not deal with: status, body and ETag. */
function withoutRetryAfter({ retryAfter: _, ...answer }: RawAnswer): Answer {
  return answer;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
