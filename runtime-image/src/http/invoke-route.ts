import type { IncomingMessage, ServerResponse } from 'node:http';
import { invalidRequest, RuntimeError } from '../errors.js';
import type { InvokeRequest, InvokeService, InvokeTimings } from '../invoke-service.js';
import type { LogContext } from '../log-context.js';
import type { InvokeTrace, Tracer } from '../tracing/spans.js';
import { parseTraceParent } from '../tracing/trace-context.js';
import { readJsonBody } from './body.js';
import { toErrorResponse } from './error-response.js';
import { EventStream } from './event-stream.js';
import { sendJson, type RequestContext } from './respond.js';

export const MAX_BODY_BYTES = 1024 * 1024;
export const MAX_INPUT_CHARS = 100_000;
// Caller-chosen ids are allowed (an unknown id starts a conversation under it),
// so they are kept to characters that are safe in logs and headers, and to the ids of
// agent services' Sessions API v1, which carries them in its URL path: there "." and
// ".." would be path steps, so they are no ids.
const SESSION_ID = /^(?!\.{1,2}$)[A-Za-z0-9._:-]{1,128}$/;

const MAX_REQUEST_ID_CHARS = 200;

/**
 * With a trace, every line logged while the invoke runs names its trace id (`logContext`),
 * its request line included (`context.traceId`). Without one (tracing off) no line does,
 * not even the caller's `traceparent` trace: the platform would have no invocation under it.
 */
export function createInvokeRoute(service: InvokeService, agentId: string, tracer: Tracer, logContext: LogContext) {
  return async (request: IncomingMessage, response: ServerResponse, context: RequestContext): Promise<void> => {
    const trace = tracer.startInvoke({ parent: parseTraceParent(request.headers.traceparent), requestId: requestIdOf(request) });
    if (trace === undefined) {
      await serveInvoke(service, agentId, request, response, context, undefined);
      return;
    }
    // Set before anything is written, so every answer carries it, errors and streams included; the body stays v1.
    response.setHeader('traceparent', trace.traceparent());
    context.traceId = trace.root.traceId;
    let failure: unknown;
    try {
      await logContext.withTrace(trace.root.traceId, () => serveInvoke(service, agentId, request, response, context, trace));
    } catch (error) {
      failure = error;
      throw error;
    } finally {
      endRootSpan(trace, context, failure ?? context.failure);
    }
  };
}

async function serveInvoke(
  service: InvokeService,
  agentId: string,
  request: IncomingMessage,
  response: ServerResponse,
  context: RequestContext,
  trace: InvokeTrace | undefined,
): Promise<void> {
  const invoke: InvokeRequest = { ...parseInvokeBody(await readJsonBody(request, MAX_BODY_BYTES)), trace };
  context.sessionId = invoke.sessionId;
  if (wantsEventStream(request)) {
    await streamInvoke(service, invoke, agentId, response, context);
    return;
  }
  const result = await service.invoke(invoke);
  context.sessionId = result.sessionId;
  sendJson(response, 200, { output: result.output, session_id: result.sessionId, agent_id: agentId }, { 'server-timing': serverTiming(result.timings) });
}

/**
 * The invoke's timings as Server-Timing (W3C Server Timing, `name;dur=milliseconds`), which
 * browsers' developer tools and `curl -i` show: whether a slow answer was the model or the
 * conversation's store. Only a whole answer has it; a stream's headers go before the turn.
 */
export function serverTiming(timings: InvokeTimings): string {
  const metric = (name: string, ms: number) => `${name};dur=${ms.toFixed(3)}`;
  return [metric('session-read', timings.sessionReadMs), metric('turn', timings.turnMs), metric('session-write', timings.sessionWriteMs)].join(', ');
}

/** A failure is named by its catalogue code; only a RuntimeError's message, which is the caller's to see anyway, is kept. */
function endRootSpan(trace: InvokeTrace, context: RequestContext, failure: unknown): void {
  trace.root.set('gen_ai.conversation.id', context.sessionId);
  if (failure === undefined) trace.root.end();
  else if (failure instanceof RuntimeError) trace.root.fail(failure.code, failure.message);
  else trace.root.fail('INTERNAL_ERROR');
}

function requestIdOf(request: IncomingMessage): string | undefined {
  const id = request.headers['x-request-id'];
  return typeof id === 'string' && id !== '' ? id.slice(0, MAX_REQUEST_ID_CHARS) : undefined;
}

/**
 * Beyond v1: deltas of the answer as `delta` events, then `done` with the
 * v1 body. An error before the first event is a normal JSON error response;
 * after it, an `error` event carrying the same body.
 */
async function streamInvoke(
  service: InvokeService,
  invoke: InvokeRequest,
  agentId: string,
  response: ServerResponse,
  context: RequestContext,
): Promise<void> {
  const stream = new EventStream(response);
  try {
    const result = await service.invoke({ ...invoke, onTextDelta: (text) => stream.send('delta', { text }) });
    context.sessionId = result.sessionId;
    stream.send('done', { output: result.output, session_id: result.sessionId, agent_id: agentId });
  } catch (error) {
    if (!stream.hasStarted) throw error;
    context.failure = error;
    stream.send('error', toErrorResponse(error).body);
  }
  stream.end();
}

function wantsEventStream(request: IncomingMessage): boolean {
  return (request.headers.accept ?? '').includes('text/event-stream');
}

export function parseInvokeBody(body: unknown): InvokeRequest {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw invalidRequest('request body must be a JSON object with an "input" string');
  }
  const { input, session_id: sessionId } = body as Record<string, unknown>;
  if (input === undefined) throw invalidRequest('"input" is required');
  if (typeof input !== 'string') throw invalidRequest('"input" must be a string');
  if (input.trim() === '') throw invalidRequest('"input" must not be empty');
  if (input.length > MAX_INPUT_CHARS) throw invalidRequest(`"input" must be at most ${MAX_INPUT_CHARS} characters`);
  if (sessionId !== undefined && sessionId !== null) {
    if (typeof sessionId !== 'string') throw invalidRequest('"session_id" must be a string');
    if (!SESSION_ID.test(sessionId)) {
      throw invalidRequest('"session_id" must be 1-128 letters, digits, ".", "_", ":" or "-", and not "." or ".."');
    }
  }
  return { input, sessionId: sessionId ?? undefined };
}
