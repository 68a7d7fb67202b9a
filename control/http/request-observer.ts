import type { Middleware } from 'koa';

/** One answered request, as metrics count and time it. */
export interface RequestRecord {
  method: string;
  /**
   * The @koa/router layer path that answered (`/v1/agents/:id`), never the URL: ids in a
   * label would make a series per agent. `unmatched` when no route took the request.
   */
  route: string;
  status: number;
  durationMs: number;
}

export type RequestObserver = (request: RequestRecord) => void;

export const UNMATCHED_ROUTE = 'unmatched';

/**
 * Tells `observe` of every request once it is answered. It runs outside the error
 * middleware, so it sees the status the client gets; an observer's fault is swallowed,
 * as a request must not fail because it could not be counted.
 */
export function requestObserver(observe: RequestObserver): Middleware {
  return async (ctx, next) => {
    const started = process.hrtime.bigint();
    try {
      await next();
    } finally {
      // Set by @koa/router (dist/index.js, _setMatchedRouteInfo and _buildMiddlewareChain) on the layer that matched.
      const matched: unknown = (ctx as { _matchedRoute?: unknown })._matchedRoute;
      const record = {
        method: ctx.method,
        route: typeof matched === 'string' ? matched : UNMATCHED_ROUTE,
        status: ctx.status,
        durationMs: Number(process.hrtime.bigint() - started) / 1e6,
      };
      try {
        observe(record);
      } catch {
        // Counting is best effort; the request's answer is already decided.
      }
    }
  };
}
