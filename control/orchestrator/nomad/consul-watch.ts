import type { Logger } from 'pino';
import type { ConsulServiceEntry } from './api-types.js';
import type { ApiClient } from './http-client.js';

/** Passing instances of one service: allocation id → `ip:port`. */
export type PassingInstances = ReadonlyMap<string, string>;

/**
 * The allocation behind a Consul instance. Nomad registers group services with the id
 * `_nomad-task-<alloc id>-group-<group>-<service>-<port label>` (task services:
 * `_nomad-task-<alloc id>-<task>-…`); the alloc id is a UUID.
 */
export function allocationOf(serviceId: string): string | null {
  const match = /^_nomad-task-([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})-/.exec(serviceId);
  return match ? match[1]! : null;
}

export function passingFrom(entries: ConsulServiceEntry[]): Map<string, string> {
  const passing = new Map<string, string>();
  for (const entry of entries) {
    const allocation = allocationOf(entry.Service.ID);
    if (!allocation) continue;
    // An instance registered without an address takes its node's.
    passing.set(allocation, `${entry.Service.Address || entry.Node.Address}:${entry.Service.Port}`);
  }
  return passing;
}

export interface WatchOptions {
  waitSeconds: number;
  /** Back-off after a failed query: doubled per failure up to the maximum. */
  backoffMs: number;
  maxBackoffMs: number;
}

/**
 * Follows the passing instances of `service` with Consul blocking queries: each query
 * carries the last X-Consul-Index and returns when the set changed (or after `wait`).
 * A failed query backs off and resumes with the same index, so no change is lost and
 * the watch never restarts from scratch. An index that goes backwards (a Consul
 * restart, a snapshot restore) starts over from 0, as Consul's docs ask.
 */
export class ConsulHealthWatch {
  private index = 0;
  private stopped = false;
  private readonly abort = new AbortController();
  private current: Map<string, string> = new Map();
  private loop: Promise<void> | undefined;

  constructor(
    private readonly consul: ApiClient,
    readonly service: string,
    private readonly options: WatchOptions,
    private readonly onChange: (passing: PassingInstances) => void,
    private readonly logger: Logger,
  ) {}

  get passing(): PassingInstances {
    return this.current;
  }

  start(): this {
    this.loop = this.run();
    return this;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.abort.abort();
    await this.loop;
  }

  private async run(): Promise<void> {
    let failures = 0;
    while (!this.stopped) {
      try {
        const { body, headers } = await this.consul.request<ConsulServiceEntry[] | null>('GET', `/v1/health/service/${encodeURIComponent(this.service)}`, {
          query: { passing: true, index: this.index || undefined, wait: `${this.options.waitSeconds}s` },
          timeoutMs: this.options.waitSeconds * 1000 + 15_000,
          signal: this.abort.signal,
        });
        failures = 0;
        const next = Number(headers.get('x-consul-index') ?? 0);
        this.index = next > 0 && next >= this.index ? next : 0;
        const passing = passingFrom(body ?? []);
        if (!sameInstances(passing, this.current)) {
          this.current = passing;
          this.onChange(passing);
        }
      } catch (error) {
        if (this.stopped) return;
        failures += 1;
        const delay = Math.min(this.options.backoffMs * 2 ** (failures - 1), this.options.maxBackoffMs);
        this.logger.warn({ err: error, service: this.service, index: this.index, retry_in_ms: delay }, 'Consul health watch failed; resuming with the same index');
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, delay);
          this.abort.signal.addEventListener('abort', () => {
            clearTimeout(timer);
            resolve();
          }, { once: true });
        });
      }
    }
  }
}

const sameInstances = (a: ReadonlyMap<string, string>, b: ReadonlyMap<string, string>) =>
  a.size === b.size && [...a].every(([key, value]) => b.get(key) === value);
