import type { Redis } from 'ioredis';
import type { Clock } from '../../contract/clock.js';

export interface RateDecision {
  allowed: boolean;
  /** Whole seconds until the current window ends, at least 1. */
  retryAfterSeconds: number;
}

const MINUTE_MS = 60_000;

/**
 * Fixed windows (one minute unless asked otherwise) aligned to the clock, counted in Redis
 * so every copy of the control API shares them. One round trip: INCR and an expiry that
 * only the first hit sets.
 */
export class FixedWindowLimiter {
  constructor(private readonly redis: Redis, private readonly clock: Clock) {}

  async hit(key: string, limit: number, windowMs = MINUTE_MS): Promise<RateDecision> {
    const now = this.clock.now().getTime();
    const window = Math.floor(now / windowMs);
    // The window's length is in the key, so a minute and an hour window never share a count.
    const windowKey = windowMs === MINUTE_MS ? `rl:${key}:${window}` : `rl:${key}:${windowMs}:${window}`;
    const results = await this.redis.multi().incr(windowKey).expire(windowKey, Math.ceil((2 * windowMs) / 1000), 'NX').exec();
    const count = Number(results?.[0]?.[1] ?? 0);
    const retryAfterSeconds = Math.max(1, Math.ceil(((window + 1) * windowMs - now) / 1000));
    return { allowed: count <= limit, retryAfterSeconds };
  }
}
