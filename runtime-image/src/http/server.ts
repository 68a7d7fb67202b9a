import { createServer as createNodeServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Clock } from '../clock.js';
import { RuntimeError } from '../errors.js';
import { TRACE_ID_FIELD } from '../log-context.js';
import type { LogFields, Logger } from '../logger.js';
import { toErrorResponse } from './error-response.js';
import { sendJson, type RequestContext } from './respond.js';

export type RouteHandler = (request: IncomingMessage, response: ServerResponse, context: RequestContext) => Promise<void> | void;

/** Path → method → handler. HEAD is served by the GET handler. */
export type Routes = Readonly<Record<string, Partial<Record<'GET' | 'POST', RouteHandler>>>>;

/** A node:http server that routes, renders every error the same way and logs one line per request. */
export function createHttpServer(routes: Routes, deps: { logger: Logger; clock: Clock }): Server {
  return createNodeServer((request, response) => {
    const context: RequestContext = {};
    const startedAt = deps.clock.now();
    const path = new URL(request.url ?? '/', 'http://runtime').pathname;
    response.on('close', () => logRequest(deps, request.method ?? '', path, response, context, deps.clock.now() - startedAt));
    void dispatch(routes, path, request, response, context);
  });
}

async function dispatch(
  routes: Routes,
  path: string,
  request: IncomingMessage,
  response: ServerResponse,
  context: RequestContext,
): Promise<void> {
  const methods = Object.prototype.hasOwnProperty.call(routes, path) ? routes[path] : undefined;
  const method = request.method === 'HEAD' ? 'GET' : request.method;
  const handler = methods && (method === 'GET' || method === 'POST') ? methods[method] : undefined;
  try {
    if (methods === undefined) throw new RuntimeError('NOT_FOUND', `no such path: ${path}`);
    if (handler === undefined) {
      const allowed = Object.keys(methods).flatMap((m) => (m === 'GET' ? ['GET', 'HEAD'] : [m]));
      sendError(request, response, new RuntimeError('METHOD_NOT_ALLOWED', `${request.method} is not allowed on ${path}`), context, {
        allow: allowed.join(', '),
      });
      return;
    }
    await handler(request, response, context);
  } catch (error) {
    sendError(request, response, error, context);
  }
}

function sendError(
  request: IncomingMessage,
  response: ServerResponse,
  error: unknown,
  context: RequestContext,
  headers: Record<string, string> = {},
): void {
  context.failure = error;
  if (response.headersSent) {
    response.destroy();
    return;
  }
  const { status, body } = toErrorResponse(error);
  // A body left unread (e.g. refused as too large) would otherwise be parsed as the next request.
  const connection: Record<string, string> = request.complete ? {} : { connection: 'close' };
  sendJson(response, status, body, { ...headers, ...connection });
}

function logRequest(
  deps: { logger: Logger },
  method: string,
  path: string,
  response: ServerResponse,
  context: RequestContext,
  durationMs: number,
): void {
  const status = response.statusCode;
  const fields: LogFields = { method, path, status, duration_ms: durationMs, session_id: context.sessionId, [TRACE_ID_FIELD]: context.traceId };
  if (context.failure !== undefined) {
    const failure = context.failure;
    fields['error_code'] = failure instanceof RuntimeError ? failure.code : 'INTERNAL_ERROR';
    if (!(failure instanceof RuntimeError) || failure.code === 'INTERNAL_ERROR') {
      // Only the class of an unexpected error: its text could carry the caller's input.
      fields['error_name'] = errorName(failure);
    } else {
      // The runtime's own words, as the caller got them, and what only the owner may see.
      Object.assign(fields, { error_message: failure.message, ...failure.logFields });
    }
  }
  if (!response.writableFinished) fields['aborted'] = true;
  const level = status >= 500 || fields['error_code'] === 'INTERNAL_ERROR' ? 'error' : status >= 400 ? 'warn' : 'info';
  deps.logger[level]('request', fields);
}

function errorName(error: unknown): string {
  const cause = error instanceof Error ? error.cause : undefined;
  const name = error instanceof Error ? error.name : typeof error;
  return cause instanceof Error ? `${name} (cause: ${cause.name})` : name;
}
