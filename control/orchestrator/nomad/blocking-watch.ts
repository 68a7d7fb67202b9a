import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import { backoffMs } from '../../../contract/backoff.js';

/** One answer of a blocking query: the body and the index it was read at. */
export interface IndexedRead<T> {
  body: T;
  index: number;
}

export interface BlockingWatchOptions {
  /** Shortest time from the start of one query to the start of the next. */
  minIntervalMs: number;
  /** Back-off after a failed query: its ceiling doubled per failure up to the maximum, with full jitter (contract/backoff.ts). */
  backoffMs: number;
  maxBackoffMs: number;
}

/**
 * The index to send with the next query, after an answer read at `returned` (Consul's
 * "Blocking Queries" page, "Implementation details"; Nomad's blocking queries follow the
 * same rules). An index that goes backwards (a restore, a new cluster) starts over: the
 * data is read afresh. Then, whatever happened, the index is at least 1: `index=0` never
 * blocks, so a server answering 0 would otherwise turn the watch into a busy loop, and
 * index 1 answers at once with everything when the data is past it, like a fresh read.
 */
export function nextIndex(previous: number, returned: number): number {
  const kept = Number.isFinite(returned) && returned >= previous ? returned : 0;
  return Math.max(kept, 1);
}

/**
 * Follows one blocking query (Nomad's or Consul's): each query carries the index of the
 * last answer and returns when the data changed or its wait ended. Queries start at most
 * once per `minIntervalMs`; a failed query backs off and resumes with the same index, so
 * no change is lost and the watch never starts over because of an outage.
 */
export class BlockingWatch<T> {
  private index = 0;
  private stopped = false;
  private readonly abort = new AbortController();
  private loop: Promise<void> | undefined;
  private resolveSynced!: () => void;
  /** Resolves after the first successful read. */
  readonly synced = new Promise<void>((resolve) => (this.resolveSynced = resolve));

  constructor(
    readonly name: string,
    private readonly read: (index: number, signal: AbortSignal) => Promise<IndexedRead<T>>,
    private readonly options: BlockingWatchOptions,
    private readonly onRead: (body: T) => void,
    private readonly logger: Logger,
  ) {}

  start(): this {
    this.loop ??= this.run();
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
      // Monotonic: a wall clock stepped back (NTP) must not stretch or skip the pause.
      const started = performance.now();
      try {
        const { body, index } = await this.readOnce();
        failures = 0;
        this.index = nextIndex(this.index, index);
        this.onRead(body);
        this.resolveSynced();
        await this.pause(this.options.minIntervalMs - (performance.now() - started));
      } catch (error) {
        if (this.stopped) return;
        failures += 1;
        // Jittered: the watches of every copy of the control API do not return to a recovered server at once.
        const delay = backoffMs({ baseMs: this.options.backoffMs, maxMs: this.options.maxBackoffMs }, failures);
        this.logger.warn({ err: error, watch: this.name, index: this.index, retry_in_ms: delay }, 'blocking query failed; resuming with the same index');
        await this.pause(delay);
      }
    }
  }

  /** One query, with a signal of its own: listeners never pile up on the watch's long-lived one. */
  private async readOnce(): Promise<IndexedRead<T>> {
    const query = new AbortController();
    const cancel = () => query.abort();
    this.abort.signal.addEventListener('abort', cancel, { once: true });
    try {
      return await this.read(this.index, query.signal);
    } finally {
      this.abort.signal.removeEventListener('abort', cancel);
    }
  }

  private pause(ms: number): Promise<void> {
    if (ms <= 0 || this.stopped) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.abort.signal.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.abort.signal.addEventListener('abort', done, { once: true });
    });
  }
}
