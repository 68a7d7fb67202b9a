import Router from '@koa/router';
import Koa from 'koa';
import type { Logger } from 'pino';
import { canWrite } from '../domain/roles.js';
import { PlatformError } from '../domain/errors.js';
import { auditContextOf } from '../services/principal.js';
import type { Authenticator } from './authenticate.js';
import { serveConsole } from './console-static.js';
import { errorMiddleware, unansweredAsErrors } from './error-middleware.js';
import { mountProbes, PROBE_PATHS } from './health.js';
import { parseIfMatch } from './if-match.js';
import { readJsonBody } from './json-body.js';
import { REFERENCE_PATH, serveReference } from './reference-page.js';
import { requestLog } from './request-log.js';
import { requestObserver, type RequestObserver } from './request-observer.js';
import type { RouteSpec } from './route.js';
import { assertStorable, assertStorableParams } from './storable-text.js';
import { compileValidator } from './validation.js';
import type { Readiness } from './readiness.js';

export interface AppDependencies {
  routes: RouteSpec[];
  authenticate: Authenticator;
  /** Whether Postgres and Redis answer; backs GET /readyz (and /healthz). */
  checkReadiness: () => Promise<Readiness>;
  logger: Logger;
  trustProxy: boolean;
  /** Told of every answered request (metrics: control/metrics/). */
  onRequest?: RequestObserver;
  /** The web console's build folder and the agents' origin its "Try it" calls; no console without it. */
  console?: { root: string; edgeOrigin: string };
  /** The OpenAPI document, rendered as the reference page at /docs; no page without it. */
  reference?: () => Record<string, any>;
}

export const API_PREFIX = '/v1';

export function createApp(deps: AppDependencies): Koa {
  const app = new Koa({ proxy: deps.trustProxy });
  // Koa's own error printing would bypass our logger; every error is rendered by errorMiddleware.
  app.silent = true;
  app.use(requestLog(deps.logger, PROBE_PATHS));
  if (deps.onRequest) app.use(requestObserver(deps.onRequest));
  app.use(errorMiddleware(deps.logger));

  if (deps.reference) app.use(serveReference(deps.reference));
  if (deps.console) {
    const isReserved = (path: string) => path === API_PREFIX || path.startsWith(`${API_PREFIX}/`) || PROBE_PATHS.has(path) || path === REFERENCE_PATH;
    app.use(serveConsole({ ...deps.console, isReserved }));
  }

  const router = new Router();
  mountProbes(router, deps.checkReadiness);
  for (const route of deps.routes) mount(router, route, deps.authenticate);

  app.use(unansweredAsErrors());
  app.use(router.routes());
  app.use(router.allowedMethods());
  return app;
}

function mount(router: Router, route: RouteSpec, authenticate: Authenticator): void {
  const validateBody = route.body ? compileValidator(route.body, 'body') : undefined;
  const validateQuery = route.query ? compileValidator(route.query, 'query') : undefined;
  // Only what the route declares is read, so the OpenAPI document's parameters are all it honours.
  const reads = new Set(route.reads ?? []);

  router[route.method](API_PREFIX + route.path, async (ctx) => {
    const principal = route.auth === 'none' || (route.auth === 'optional' && !ctx.get('Authorization'))
      ? undefined
      : await authenticate({ authorization: ctx.get('Authorization'), accountId: ctx.get('X-Account-Id') || undefined });
    ctx.state.principal = principal;
    if (route.writes && principal && !canWrite(principal.role)) {
      throw new PlatformError('AUTHORISATION_DENIED', `The ${principal.role} role may read but not change anything`);
    }

    // Text Postgres cannot store is refused here, for every route, before any handler runs SQL.
    assertStorableParams(ctx.params);
    const query = { ...ctx.query };
    assertStorable(query, 'query');
    validateQuery?.(query);
    let body: unknown = undefined;
    if (validateBody) {
      // An absent body is checked as {} so each missing required field is reported by name.
      body = (await readJsonBody(ctx.req)) ?? {};
      assertStorable(body, 'body');
      validateBody(body);
    }

    const requestId: string = ctx.state.requestId;
    const result = await route.handler({
      body,
      query,
      params: ctx.params,
      principal,
      clientIp: ctx.ip,
      requestId,
      audit: principal ? auditContextOf(principal, requestId, ctx.ip) : undefined,
      expectedVersion: reads.has('If-Match') ? parseIfMatch(ctx.get('If-Match') || undefined) : undefined,
      lastEventId: reads.has('Last-Event-ID') ? ctx.get('Last-Event-ID') || undefined : undefined,
    });
    ctx.status = result.status;
    for (const [name, value] of Object.entries(result.headers ?? {})) ctx.set(name, value);
    if (result.body !== undefined) ctx.body = result.body;
  });
}
