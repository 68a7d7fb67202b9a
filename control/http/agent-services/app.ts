import Router from '@koa/router';
import Koa, { type Middleware } from 'koa';
import type { Logger } from 'pino';
import type { AgentCredential } from '../../crypto/agent-token.js';
import { PlatformError } from '../../domain/errors.js';
import type { AgentSessionService } from '../../services/agent-session-service.js';
import type { TraceIngest } from '../../services/trace-ingest.js';
import { errorMiddleware, unansweredAsErrors } from '../error-middleware.js';
import { requestLog } from '../request-log.js';
import { requestObserver, type RequestObserver } from '../request-observer.js';
import { mountAgentRoutes } from './agent-route.js';
import { mountBatchRoute } from './batch-route.js';
import { sessionRoutes } from './session-routes.js';
import { traceRoutes } from './trace-routes.js';

export interface AgentServicesAppDependencies {
  sessions: AgentSessionService;
  /** Spans replicas send (issue 38). */
  traces: TraceIngest;
  /**
   * The replica a bearer token speaks for, or null when it is malformed, forged, expired or
   * names no agent (services/replica-credentials.ts: a platform token, or on Nomad the
   * task's workload identity, whose check may fetch Nomad's keys).
   */
  verifyToken: (token: string) => Promise<AgentCredential | null>;
  /** SESSION_MAX_BYTES: a body is refused past it (and the room its envelope takes) before it is parsed. */
  maxSessionBytes: number;
  logger: Logger;
  onRequest?: RequestObserver;
}

/**
 * The agent services endpoint (issue 37): the one platform listener agents' containers may
 * reach, served by the control API process on a port of its own (AGENT_SERVICES_PORT). It
 * shares nothing with the control API but its error catalogue and renderer: no user token
 * is accepted here and no control API route is reachable, and every request needs a
 * replica's credential, which names the one agent everything it does is scoped to.
 */
export function createAgentServicesApp(deps: AgentServicesAppDependencies): Koa {
  const app = new Koa();
  // Koa's own error printing would bypass our logger; every error is rendered by errorMiddleware.
  app.silent = true;
  app.use(requestLog(deps.logger.child({ component: 'agent-services' })));
  if (deps.onRequest) app.use(requestObserver(deps.onRequest));
  app.use(errorMiddleware(deps.logger));
  // Before routing: without a valid token, not even which paths exist is told.
  app.use(replicaAuthentication(deps.verifyToken));
  const router = new Router();
  const sessions = sessionRoutes(deps.sessions);
  mountAgentRoutes(router, [...sessions, ...traceRoutes(deps.traces)], deps.maxSessionBytes);
  mountBatchRoute(router, sessions, { maxSessionBytes: deps.maxSessionBytes, logger: deps.logger });
  app.use(unansweredAsErrors());
  app.use(router.routes());
  app.use(router.allowedMethods());
  return app;
}

function replicaAuthentication(verify: (token: string) => Promise<AgentCredential | null>): Middleware {
  return async (ctx, next) => {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(ctx.get('Authorization'));
    const credential = match ? await verify(match[1]!) : null;
    if (!credential) throw new PlatformError('UNAUTHENTICATED', 'Send Authorization: Bearer <token>, the current token of AGENT_SERVICES_TOKEN_FILE');
    ctx.state.credential = credential;
    await next();
  };
}
