import { Gauge, type Registry } from 'prom-client';
import type { OutboxBacklog } from '../repositories/webhook-outbox.js';
import { readAtScrape } from './scrape-time.js';

/**
 * The webhook outbox (docs/webhooks.md, "Delivery"), read from Postgres at scrape time.
 * Deliveries waiting for a retry are a receiver's trouble; deliveries due and not claimed,
 * growing older, mean no control API is delivering.
 */
export function webhookMetrics(registry: Registry, backlog: () => Promise<OutboxBacklog>): void {
  // This scrape's read, shared by both families (collected in registration order, as agent-metrics.ts).
  let reading: Promise<OutboxBacklog | undefined> = Promise.resolve(undefined);
  new Gauge({
    name: 'agent_platform_webhook_outbox_deliveries',
    help: 'Webhook deliveries in the outbox by state: due (to be attempted now) or scheduled (waiting for a retry), read from Postgres at scrape time.',
    labelNames: ['state'] as const,
    registers: [registry],
    async collect() {
      reading = readAtScrape(backlog);
      const read = await reading;
      this.reset();
      if (read) {
        this.set({ state: 'due' }, read.due);
        this.set({ state: 'scheduled' }, read.scheduled);
      }
    },
  });
  new Gauge({
    name: 'agent_platform_webhook_outbox_oldest_due_age_seconds',
    help: 'Seconds the oldest due webhook delivery has waited for an attempt (0 when none is due, NaN when the read failed), by Postgres clock, at scrape time.',
    registers: [registry],
    async collect() {
      // A family without labels always has its one sample: NaN, not a reassuring 0, when Postgres did not answer.
      this.set((await reading)?.oldestDueSeconds ?? Number.NaN);
    },
  });
}
