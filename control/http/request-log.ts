import { randomUUID } from 'node:crypto';
import type { Middleware } from 'koa';
import type { Logger } from 'pino';

/**
 * One log line per request with what an operator needs to follow it: never headers or
 * bodies, which carry tokens, passwords and model keys. A successful request to one of
 * `quietPaths` (health probes, every few seconds from every checker) logs at debug only.
 */
export function requestLog(logger: Logger, quietPaths: ReadonlySet<string> = new Set()): Middleware {
  return async (ctx, next) => {
    const started = process.hrtime.bigint();
    const incoming = ctx.get('X-Request-Id');
    const requestId = /^[\w.-]{1,128}$/.test(incoming) ? incoming : randomUUID();
    ctx.state.requestId = requestId;
    ctx.set('X-Request-Id', requestId);
    try {
      await next();
    } finally {
      const level = quietPaths.has(ctx.path) && ctx.status < 400 ? 'debug' : 'info';
      logger[level](
        {
          request_id: requestId,
          method: ctx.method,
          path: withoutSecrets(ctx.path),
          status: ctx.status,
          duration_ms: Number(process.hrtime.bigint() - started) / 1e6,
          account_id: ctx.state.principal?.accountId,
          // On the agent services endpoint: the agent whose replica called (never its token).
          agent_id: ctx.state.credential?.agentId,
        },
        'request',
      );
    }
  };
}

/**
 * The path with an invite's secret masked: POST /v1/auth/invites/{secret}/accept is the one
 * route that takes a secret in its path (the link's secret, issue 39).
 */
export function withoutSecrets(path: string): string {
  return path.replace(/\/invites\/[^/]+\/accept$/, '/invites/***/accept');
}
