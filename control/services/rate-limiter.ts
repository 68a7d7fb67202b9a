import type { Redis } from 'ioredis';
import type { Clock } from '../../contract/clock.js';

export interface RateDecision {
  allowed: boolean;
  /** Whole seconds until the current window ends, at least 1. */
  retryAfterSeconds: number;
}

const MINUTE_MS = 60_000;

/**
 * KEYS[1] the window's counter, ARGV[1] its time to live in seconds. The expiry is set with
 * the first hit, in the same atomic step, so no counter outlives its window for want of it.
 */
const HIT_SCRIPT = `
local count = redis.call('INCR', KEYS[1])
if count == 1 then redis.call('EXPIRE', KEYS[1], ARGV[1]) end
return count`;

const COMMAND_NAME = 'fixedWindowHit';

interface RedisWithHitScript {
  [COMMAND_NAME](key: string, ttlSeconds: number): Promise<number>;
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
    const now = this.clock.now().getTime();
    const window = Math.floor(now / windowMs);
    // The window's length is in the key, so a minute and an hour window never share a count.
    const windowKey = windowMs === MINUTE_MS ? `rl:${key}:${window}` : `rl:${key}:${windowMs}:${window}`;
    const count = Number(await this.redis[COMMAND_NAME](windowKey, Math.ceil((2 * windowMs) / 1000)));
    const retryAfterSeconds = Math.max(1, Math.ceil(((window + 1) * windowMs - now) / 1000));
    return { allowed: count <= limit, retryAfterSeconds };
  }
}
