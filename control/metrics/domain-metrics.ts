import { Gauge, type Registry } from 'prom-client';
import { readAtScrape } from './scrape-time.js';

/**
 * When each active custom domain's certificate expires, read from Postgres at scrape time.
 * One series per active domain: custom domains are few (a plan's quota each), unlike agents.
 * The domain worker renews well before (renew_after); this shows renewal falling behind.
 */
export function domainMetrics(registry: Registry, certificateExpiries: () => Promise<Map<string, Date>>): void {
  new Gauge({
    name: 'agent_platform_domain_certificate_expiry_timestamp_seconds',
    help: "Unix time at which an active custom domain's certificate expires (agent_domains.certificate_not_after), by hostname, read from Postgres at scrape time (left empty when the read fails).",
    labelNames: ['hostname'] as const,
    registers: [registry],
    async collect() {
      const expiries = await readAtScrape(certificateExpiries);
      this.reset();
      for (const [hostname, notAfter] of expiries ?? []) this.set({ hostname }, notAfter.getTime() / 1000);
    },
  });
}
