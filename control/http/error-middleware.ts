import type { Middleware } from 'koa';
import type { Logger } from 'pino';
import { errorCatalogue, PlatformError } from '../errors.js';

/**
 * The one place where errors become responses: a PlatformError by its catalogue entry,
 * anything else as a 500 whose body reveals nothing; the cause goes to the log only.
 */
export function errorMiddleware(logger: Logger): Middleware {
  return async (ctx, next) => {
    try {
      await next();
    } catch (caught) {
      const error = caught instanceof PlatformError ? caught : fromUnexpected(caught, logger, ctx.state.requestId as string);
      ctx.status = errorCatalogue[error.code].status;
      const retryAfter = error.details.retry_after;
      if (typeof retryAfter === 'number') ctx.set('Retry-After', String(retryAfter));
      if (error.code === 'AUTHENTICATION_FAILED') ctx.set('WWW-Authenticate', 'Bearer');
      ctx.body = { code: error.code, message: error.message, details: error.details };
    }
  };
}

function fromUnexpected(caught: unknown, logger: Logger, requestId: string): PlatformError {
  logger.error({ err: caught, request_id: requestId }, 'unhandled error');
  return new PlatformError('INTERNAL_ERROR', 'Internal error; the request id is in X-Request-Id', { request_id: requestId });
}
