import { Gauge, type Registry } from 'prom-client';
import type { Readiness } from '../http/readiness.js';

/**
 * Whether Postgres and Redis answer this control API, asked at scrape time with the same
 * probes as GET /readyz (each under its own 1 s deadline, control/http/readiness.ts). A
 * control that cannot reach them answers 503 DATABASE_UNAVAILABLE or CACHE_UNAVAILABLE.
 */
export function dependencyMetrics(registry: Registry, checkReadiness: () => Promise<Readiness>): void {
  new Gauge({
    name: 'agent_platform_control_dependency_up',
    help: 'Whether a dependency (postgres, redis) answered this control API at scrape time: 1 yes, 0 no.',
    labelNames: ['dependency'] as const,
    registers: [registry],
    async collect() {
      const { dependencies } = await checkReadiness();
      this.reset();
      for (const [dependency, state] of Object.entries(dependencies)) this.set({ dependency }, state === 'ok' ? 1 : 0);
    },
  });
}
