import type { Redis } from 'ioredis';
import type { Clock } from '../../contract/clock.js';

export interface RateDecision {
  allowed: boolean;
  /** Whole seconds until the current window ends, at least 1. */
  retryAfterSeconds: number;
}

const MINUTE_MS = 60_000;

/** A window's count after hits were added to it, and when it ends. */
export interface WindowCount {
  /** The window's number: the clock's time divided by its length. */
  window: number;
  count: number;
  retryAfterSeconds: number;
}

/**
 * KEYS[1] the window's counter, ARGV[1] its time to live in seconds, ARGV[2] the hits to add.
 * The expiry is set with the first hits, in the same atomic step, so no counter outlives its
 * window for want of it.
 */
const HIT_SCRIPT = `
local added = tonumber(ARGV[2])
local count = redis.call('INCRBY', KEYS[1], added)
if count == added then redis.call('EXPIRE', KEYS[1], ARGV[1]) end
return count`;

const COMMAND_NAME = 'fixedWindowAdd';

interface RedisWithHitScript {
  [COMMAND_NAME](key: string, ttlSeconds: number, hits: number): Promise<number>;
}

/**
 * Fixed windows (one minute unless asked otherwise) aligned to the clock, counted in Redis
 * so every copy of the control API shares them. One round trip and one command: a script
 * that increments and, on the first hit, sets the expiry. (It was MULTI, INCR, EXPIRE NX,
 * EXEC: four commands, and ioredis's transaction objects, on every session call agents make.)
 */
export class FixedWindowLimiter {
  private readonly redis: RedisWithHitScript;

  constructor(redis: Redis, private readonly clock: Clock) {
    // defineCommand sends EVALSHA, and the script itself after a NOSCRIPT (a restarted or flushed Redis).
    if (!(COMMAND_NAME in redis)) redis.defineCommand(COMMAND_NAME, { numberOfKeys: 1, lua: HIT_SCRIPT });
    this.redis = redis as unknown as RedisWithHitScript;
  }

  async hit(key: string, limit: number, windowMs = MINUTE_MS): Promise<RateDecision> {
    const { count, retryAfterSeconds } = await this.add(key, 1, windowMs);
    return { allowed: count <= limit, retryAfterSeconds };
  }

  /** Adds `hits` to the key's current window, in one round trip. */
  async add(key: string, hits: number, windowMs: number): Promise<WindowCount> {
    const { window, retryAfterSeconds } = this.currentWindow(windowMs);
    // The window's length is in the key, so a minute and an hour window never share a count.
    const windowKey = windowMs === MINUTE_MS ? `rl:${key}:${window}` : `rl:${key}:${windowMs}:${window}`;
    const count = Number(await this.redis[COMMAND_NAME](windowKey, Math.ceil((2 * windowMs) / 1000), hits));
    return { window, count, retryAfterSeconds };
  }

  /** The window the clock is in now, and the whole seconds (at least 1) until it ends. */
  currentWindow(windowMs: number): Omit<WindowCount, 'count'> {
    const now = this.clock.now().getTime();
    const window = Math.floor(now / windowMs);
    return { window, retryAfterSeconds: Math.max(1, Math.ceil(((window + 1) * windowMs - now) / 1000)) };
  }
}

/** The hits of one key's window this copy of the control API holds. */
interface Lease {
  window: number;
  remaining: number;
  /** The window's count has reached its limit: no more are taken from Redis until the next window. */
  spent: boolean;
  /** A lease being taken from Redis, which the hits that find none left wait for rather than take their own. */
  taking?: Promise<void>;
}

/** Fraction of a limit one lease takes: 1/50, so a copy asks Redis once per 10 of 500 writes a second, and at most 2% goes unused per copy. */
const LEASE_FRACTION = 1 / 50;

/** Past this many keys, leases of past windows are dropped as they are met. */
const PRUNE_LEASES_PAST = 10_000;

/**
 * Fixed windows shared through Redis like FixedWindowLimiter's, for limits hit on every
 * request of a hot path (agents' session calls, hundreds a second each): a copy of the
 * control API takes hits from the window's counter in leases of 1/50 of the limit at once
 * (INCRBY), and spends them without asking Redis again. The count in Redis only grows
 * within a window, so together the copies never admit more than the limit; the price is
 * that hits one copy leased and did not use by the window's end are lost to the others
 * (under 2% of the limit per copy). Once a lease comes back short, the window is spent
 * and the rest of it is refused without a round trip.
 */
export class LeasedWindowLimiter {
  private readonly leases = new Map<string, Lease>();

  constructor(private readonly windows: FixedWindowLimiter) {}

  async hit(key: string, limit: number, windowMs: number): Promise<RateDecision> {
    for (;;) {
      // Again after each wait: a lease taken as the window turned is of no use in the next.
      const { window, retryAfterSeconds } = this.windows.currentWindow(windowMs);
      const lease = this.leaseOf(key, window);
      if (lease.remaining > 0) {
        lease.remaining -= 1;
        return { allowed: true, retryAfterSeconds };
      }
      if (lease.spent) return { allowed: false, retryAfterSeconds };
      lease.taking ??= this.take(key, lease, limit, windowMs).finally(() => {
        lease.taking = undefined;
      });
      await lease.taking;
    }
  }

  private leaseOf(key: string, window: number): Lease {
    const held = this.leases.get(key);
    if (held?.window === window) return held;
    if (this.leases.size > PRUNE_LEASES_PAST) this.pruneBefore(window);
    const lease: Lease = { window, remaining: 0, spent: false };
    this.leases.set(key, lease);
    return lease;
  }

  private async take(key: string, lease: Lease, limit: number, windowMs: number): Promise<void> {
    const wanted = Math.max(1, Math.ceil(limit * LEASE_FRACTION));
    const { window, count } = await this.windows.add(key, wanted, windowMs);
    // The clock moved on while Redis answered: these hits belong to a window already over.
    if (window !== lease.window) return;
    const granted = Math.min(wanted, Math.max(0, limit - (count - wanted)));
    lease.remaining += granted;
    if (granted < wanted) lease.spent = true;
  }

  private pruneBefore(window: number): void {
    for (const [key, lease] of this.leases) if (lease.window < window) this.leases.delete(key);
  }
}
