import { Redis } from 'ioredis';

/**
 * A Redis client whose commands fail fast instead of queueing forever while Redis is
 * away: callers decide what an outage means for them (the edge fails closed).
 */
export function connectRedis(url: string, keyPrefix = ''): Redis {
  const client = new Redis(url, {
    keyPrefix,
    connectTimeout: 2_000,
    commandTimeout: 2_000,
    maxRetriesPerRequest: 1,
    enableOfflineQueue: true,
    retryStrategy: (attempt) => Math.min(attempt * 200, 2_000),
  });
  // Connection errors also fail the commands that needed the connection, and each caller
  // handles those; without a listener ioredis would print every reconnect attempt.
  client.on('error', () => undefined);
  return client;
}
