import type Router from '@koa/router';
import type { Middleware } from 'koa';
import { PlatformError } from '../domain/errors.js';
import type { Readiness } from './readiness.js';

/** Probe paths, outside /v1: for Nomad's and Consul's checks and load balancers, not for API clients. */
export const PROBE_PATHS: ReadonlySet<string> = new Set(['/livez', '/readyz', '/healthz']);

/**
 * Liveness and readiness apart, because they call for different remedies (docs/nomad.md):
 * - GET /livez: the process can serve. Answering at all is the proof: a wedged event loop
 *   answers nothing, and the check's timeout fails it. It never waits on Postgres or Redis,
 *   so their outage cannot make Nomad restart every copy (check_restart sits on this one).
 * - GET /readyz: Postgres and Redis answer; 503 NOT_READY naming the one that does not.
 *   Consul routes to a copy only while it passes.
 * - GET /healthz: the older name of /readyz, kept for callers that use it (scripts/up.ts).
 */
export function mountProbes(router: Router, checkReadiness: () => Promise<Readiness>): void {
  router.get('/livez', (ctx) => {
    ctx.body = { status: 'ok' };
  });
  const ready: Middleware = async (ctx) => {
    const { ready, dependencies } = await checkReadiness();
    if (!ready) throw notReady(dependencies);
    ctx.body = { status: 'ok', dependencies };
  };
  router.get('/readyz', ready);
  router.get('/healthz', ready);
}

function notReady(dependencies: Readiness['dependencies']): PlatformError {
  const down = Object.keys(dependencies).filter((name) => dependencies[name] !== 'ok');
  return new PlatformError('NOT_READY', `Not ready: ${down.join(' and ')} ${down.length > 1 ? 'do' : 'does'} not answer`, { dependencies });
}
