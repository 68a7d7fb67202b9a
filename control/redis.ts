import { Redis } from 'ioredis';

/**
 * A Redis client whose commands fail fast instead of queueing forever while Redis is
 * away: callers decide what an outage means for them (the edge fails closed).
 */
export function connectRedis(url: string, keyPrefix = ''): Redis {
  return new Redis(url, {
    keyPrefix,
    connectTimeout: 2_000,
    commandTimeout: 2_000,
    maxRetriesPerRequest: 1,
    enableOfflineQueue: true,
    retryStrategy: (attempt) => Math.min(attempt * 200, 2_000),
  });
}
