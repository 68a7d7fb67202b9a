/**
 * Exponential backoff, written once for every retry and restart of the platform: calls to
 * Nomad and Consul, blocking queries, webhook deliveries, replica restarts and the
 * processes `npm run up` supervises.
 */
export interface Backoff {
  /** The first wait's ceiling; each later one doubles it … */
  readonly baseMs: number;
  /** … up to this. */
  readonly maxMs: number;
}

/** Turns a wait's ceiling into the wait. */
export type Jitter = (ceilingMs: number) => number;

/**
 * Full jitter: a uniform draw in [0, ceiling) (AWS Architecture Blog, "Exponential Backoff
 * And Jitter"), so callers that failed together do not come back together. `random` keeps
 * Math.random's contract, [0, 1); tests pass their own.
 */
export const fullJitter = (random: () => number = Math.random): Jitter => (ceilingMs) => Math.floor(random() * ceilingMs);

/**
 * The ceiling itself, for a schedule that is a promise rather than a retry against a
 * shared server: a crashed process or replica restarts after the documented delay.
 */
export const NO_JITTER: Jitter = (ceilingMs) => ceilingMs;

/** The wait before the `retry`-th retry (1 for the first): base·2^(retry−1), capped at max, then jittered. */
export function backoffMs(backoff: Backoff, retry: number, jitter: Jitter = fullJitter()): number {
  // Past 2^1023 the doubling is Infinity, which the cap absorbs; a zero base would make it NaN.
  const ceilingMs = backoff.baseMs === 0 ? 0 : Math.min(backoff.maxMs, backoff.baseMs * 2 ** (retry - 1));
  return jitter(ceilingMs);
}

/**
 * What a failure says about trying again: `transient` (no answer, a 5xx, a server past its
 * connection limit) may pass; `permanent` (a refusal that will not change, a configuration
 * error, the caller giving up) would only be repeated, so the retries end at once.
 */
export type FailureKind = 'transient' | 'permanent';

export interface RetryOptions {
  /** Tries in all, the first included. */
  readonly attempts: number;
  readonly backoff: Backoff;
  readonly jitter?: Jitter;
  /** The classifier of the caller's failures. */
  readonly classify: (error: unknown) => FailureKind;
  /** Cuts a wait short and ends the retries, throwing its reason. */
  readonly signal?: AbortSignal | undefined;
}

/**
 * `attempt`'s result, tried again after a backoff while it fails transiently and attempts
 * are left; otherwise its last failure is thrown.
 */
export async function retry<T>(attempt: () => Promise<T>, options: RetryOptions): Promise<T> {
  for (let tried = 1; ; tried += 1) {
    options.signal?.throwIfAborted();
    try {
      return await attempt();
    } catch (error) {
      if (tried >= options.attempts || options.classify(error) === 'permanent') throw error;
    }
    await pause(backoffMs(options.backoff, tried, options.jitter), options.signal);
  }
}

function pause(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}
