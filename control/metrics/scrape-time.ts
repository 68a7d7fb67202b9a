import { withDeadline } from '../../contract/deadline.js';

/** A scrape waits at most this long for Postgres or Redis; Prometheus' own scrape timeout is 10 s by default. */
export const SCRAPE_QUERY_TIMEOUT_MS = 2_000;

/**
 * What a family asked at scrape time reads, or undefined when the read fails or misses its
 * deadline: the family is then left empty for that scrape rather than failing the whole
 * scrape (the other families are still worth having during an outage).
 */
export function readAtScrape<T>(read: () => Promise<T>, what = 'Postgres'): Promise<T | undefined> {
  return withDeadline(read(), SCRAPE_QUERY_TIMEOUT_MS, what).catch(() => undefined);
}
