import type { Redis } from 'ioredis';
import type { Clock } from '../clock.js';

export interface RateDecision {
  allowed: boolean;
  /** Whole seconds until the current window ends, at least 1. */
  retryAfterSeconds: number;
}

const WINDOW_MS = 60_000;

/**
 * Fixed one-minute windows aligned to the clock, counted in Redis so every copy of the
 * control API shares them. One round trip: INCR and an expiry that only the first hit sets.
 */
export class FixedWindowLimiter {
  constructor(private readonly redis: Redis, private readonly clock: Clock) {}

  async hit(key: string, limitPerMinute: number): Promise<RateDecision> {
    const now = this.clock.now().getTime();
    const window = Math.floor(now / WINDOW_MS);
    const windowKey = `rl:${key}:${window}`;
    const results = await this.redis.multi().incr(windowKey).expire(windowKey, 120, 'NX').exec();
    const count = Number(results?.[0]?.[1] ?? 0);
    const retryAfterSeconds = Math.max(1, Math.ceil(((window + 1) * WINDOW_MS - now) / 1000));
    return { allowed: count <= limitPerMinute, retryAfterSeconds };
  }
}
