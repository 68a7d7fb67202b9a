import { Counter, Gauge, type Registry } from 'prom-client';
import { AGENT_STATUSES } from '../domain/agent.js';
import { readAtScrape } from './scrape-time.js';

/**
 * Agents by status, counted in Postgres when Prometheus scrapes. A count that fails or
 * misses its deadline (scrape-time.ts) leaves the family empty for that scrape and is counted.
 */
export function agentMetrics(registry: Registry, countByStatus: () => Promise<Map<string, number>>): void {
  // This scrape's count. prom-client collects every family at once, in registration
  // order: the gauge starts the count, the failure counter (registered after it) awaits it.
  let counting: Promise<Map<string, number> | undefined> = Promise.resolve(undefined);
  new Gauge({
    name: 'agent_platform_control_agents',
    help: 'Agents of every account by status, counted in Postgres at scrape time.',
    labelNames: ['status'] as const,
    registers: [registry],
    async collect() {
      counting = readAtScrape(countByStatus);
      const counts = await counting;
      this.reset();
      if (counts) for (const status of AGENT_STATUSES) this.set({ status }, counts.get(status) ?? 0);
    },
  });
  new Counter({
    name: 'agent_platform_control_agents_count_failures_total',
    help: 'Scrapes whose count of agents by status failed or took longer than 2 s (agent_platform_control_agents was left empty).',
    registers: [registry],
    async collect() {
      if (!(await counting)) this.inc();
    },
  });
}
