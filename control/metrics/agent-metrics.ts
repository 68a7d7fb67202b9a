import { Counter, Gauge, type Registry } from 'prom-client';
import { withDeadline } from '../../contract/deadline.js';
import { AGENT_STATUSES } from '../domain/agent.js';

/** A scrape waits at most this long for Postgres; Prometheus' own scrape timeout is 10 s by default. */
export const AGENT_COUNT_TIMEOUT_MS = 2_000;

/**
 * Agents by status, counted in Postgres when Prometheus scrapes. A count that fails or
 * misses its deadline leaves the family empty for that scrape and is counted, rather than
 * failing the whole scrape (the other families are still worth having during an outage).
 */
export function agentMetrics(registry: Registry, countByStatus: () => Promise<Map<string, number>>): void {
  // This scrape's count. prom-client collects every family at once, in registration
  // order: the gauge starts the count, the failure counter (registered after it) awaits it.
  let counting: Promise<Map<string, number> | undefined> = Promise.resolve(undefined);
  new Gauge({
    name: 'platform_control_agents',
    help: 'Agents of every account by status, counted in Postgres at scrape time.',
    labelNames: ['status'] as const,
    registers: [registry],
    async collect() {
      counting = withDeadline(countByStatus(), AGENT_COUNT_TIMEOUT_MS, 'Postgres').catch(() => undefined);
      const counts = await counting;
      this.reset();
      if (counts) for (const status of AGENT_STATUSES) this.set({ status }, counts.get(status) ?? 0);
    },
  });
  new Counter({
    name: 'platform_control_agents_count_failures_total',
    help: 'Scrapes whose count of agents by status failed or took longer than 2 s (platform_control_agents was left empty).',
    registers: [registry],
    async collect() {
      if (!(await counting)) this.inc();
    },
  });
}
