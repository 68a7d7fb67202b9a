import type { Middleware } from 'koa';
import type { Logger } from 'pino';
import { dependencyOutage } from '../db/dependency-outage.js';
import { errorCatalogue, errorHeaders, PlatformError } from '../domain/errors.js';
import { CLIENT_CLOSED_REQUEST, isClientAbort } from './client-abandoned.js';

/**
 * The one place where errors become responses: a PlatformError by its catalogue entry,
 * Postgres or Redis unable to serve as 503 DATABASE_UNAVAILABLE / CACHE_UNAVAILABLE with
 * Retry-After, anything else as a 500 whose body reveals nothing; causes go to the log only.
 * A request the client abandoned is no error of ours: it is recorded as 499 and nothing is sent.
 */
export function errorMiddleware(logger: Logger): Middleware {
  return async (ctx, next) => {
    try {
      await next();
    } catch (caught) {
      const requestId = ctx.state.requestId as string;
      if (isClientAbort(caught, ctx.req)) {
        // Anyone can cut a body short: logged as an error or counted as a 500, it would page
        // operators. The request's own log line (request-log.ts, at info) shows the 499.
        ctx.status = CLIENT_CLOSED_REQUEST;
        return;
      }
      const answer = errorAnswer(caught, logger, requestId);
      ctx.status = answer.status;
      ctx.set(answer.headers);
      ctx.body = answer.body;
    }
  };
}

/** How an error is answered: its status, the headers its catalogue entry names, and `{code, message, details}`. */
export interface ErrorAnswer {
  status: number;
  headers: Record<string, string>;
  body: { code: string; message: string; details: Record<string, unknown> };
}

/**
 * The answer to `caught`, logging what an operator must see (an outage, an unexpected
 * error with its cause). Used by the middleware above, and by agent services' batch for
 * each of its calls, so a call answers alike alone and in a batch.
 */
export function errorAnswer(caught: unknown, logger: Logger, requestId: string): ErrorAnswer {
  const error = caught instanceof PlatformError ? caught : fromOutage(caught, logger, requestId) ?? fromUnexpected(caught, logger, requestId);
  const headers: Record<string, string> = {};
  // The catalogue names each code's headers, so the OpenAPI document declares exactly these.
  for (const header of errorHeaders(error.code)) {
    const value = header === 'WWW-Authenticate' ? 'Bearer' : retryAfterOf(error);
    if (value !== undefined) headers[header] = value;
  }
  return { status: errorCatalogue[error.code].status, headers, body: { code: error.code, message: error.message, details: error.details } };
}

/**
 * Put before a router: runs after it has had its turn, so a known path with another method
 * is 405 (allowedMethods marks it) and anything still unanswered is an unknown endpoint,
 * both rendered as errors by the middleware above.
 */
export function unansweredAsErrors(): Middleware {
  return async (ctx, next) => {
    await next();
    if (ctx.body !== undefined) return;
    if (ctx.status === 404) throw new PlatformError('NOT_FOUND', 'No such endpoint');
    // allowedMethods has set the Allow header; only the body is ours to give.
    if (ctx.status === 405 || ctx.status === 501) throw new PlatformError('METHOD_NOT_ALLOWED', `${ctx.method} is not allowed here; see the Allow header`);
  };
}

const retryAfterOf = (error: PlatformError): string | undefined =>
  typeof error.details.retry_after === 'number' ? String(error.details.retry_after) : undefined;

function fromOutage(caught: unknown, logger: Logger, requestId: string): PlatformError | undefined {
  const outage = dependencyOutage(caught);
  if (outage) logger.warn({ err: caught, code: outage.code, request_id: requestId }, 'a dependency cannot serve; answering 503');
  return outage;
}

function fromUnexpected(caught: unknown, logger: Logger, requestId: string): PlatformError {
  logger.error({ err: caught, request_id: requestId }, 'unhandled error');
  return new PlatformError('INTERNAL_ERROR', 'Internal error; the request id is in X-Request-Id', { request_id: requestId });
}
