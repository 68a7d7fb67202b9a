import { isDatabaseOutage } from './outage.js';
import { PlatformError } from '../domain/errors.js';
import { isRedisOutage } from './redis.js';

/**
 * How long a client is asked to wait while Postgres or Redis is away: long enough not to
 * hammer a recovering server, short against the pool's and ioredis's reconnects (≤ 2 s).
 */
export const OUTAGE_RETRY_AFTER_SECONDS = 5;

/**
 * The catalogued 503 for an error caused by Postgres or Redis being unable to serve, or
 * undefined for any other error. Follows `cause`, for code that wraps what it caught.
 */
export function dependencyOutage(error: unknown): PlatformError | undefined {
  for (let at = error, depth = 0; at instanceof Error && depth < 5; at = at.cause, depth += 1) {
    if (isDatabaseOutage(at)) return outage('DATABASE_UNAVAILABLE');
    if (isRedisOutage(at)) return outage('CACHE_UNAVAILABLE');
  }
  return undefined;
}

const outage = (code: 'DATABASE_UNAVAILABLE' | 'CACHE_UNAVAILABLE') =>
  new PlatformError(code, undefined, { retry_after: OUTAGE_RETRY_AFTER_SECONDS });
