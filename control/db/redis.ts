import { Redis } from 'ioredis';

/** REDIS_COMMAND_TIMEOUT_MS's default (control/config/config.ts), for callers without the control API's settings. */
export const DEFAULT_REDIS_COMMAND_TIMEOUT_MS = 1_000;

/**
 * A Redis client whose commands fail at once instead of queueing while Redis is away:
 * callers decide what an outage means for them (the edge fails closed, the control API
 * answers 503 CACHE_UNAVAILABLE, the token limit is skipped).
 *
 * Commands queue only until the first connection is ready, so that code may use the
 * client straight after creating it. From then on ioredis's offline queue is off: while
 * reconnecting a command is refused in microseconds ("Stream isn't writeable…") instead
 * of waiting out `commandTimeout` on every request. A command already sent when the
 * connection drops is retried on the next connection once (`maxRetriesPerRequest`) and
 * gives up `commandTimeoutMs` after it was sent at the latest, each command by its own
 * clock. Reconnects go on forever, 2 s apart at most, so the API recovers by itself.
 *
 * A Redis that stalls (stopped, swapping, a network that drops packets) keeps its
 * connection open, so without more every command would wait out its own timeout, and
 * each request, each transaction holding a row lock for its edge write, after the one
 * before. `socketTimeout` turns the stall into a drop: when no byte has come back for
 * `commandTimeoutMs` while replies are due, ioredis destroys the socket (Redis.setSocketTimeout),
 * and from then on commands are refused at once until Redis answers the reconnect's ready
 * check (which a stalled Redis never does).
 */
export function connectRedis(url: string, keyPrefix = '', commandTimeoutMs = DEFAULT_REDIS_COMMAND_TIMEOUT_MS): Redis {
  const client = new Redis(url, {
    keyPrefix,
    connectTimeout: 2_000,
    commandTimeout: commandTimeoutMs,
    socketTimeout: commandTimeoutMs,
    maxRetriesPerRequest: 1,
    enableOfflineQueue: true,
    retryStrategy: (attempt) => Math.min(attempt * 200, 2_000),
  });
  // ioredis reads the option on every command (Redis.sendCommand), so turning it off takes effect at once.
  client.once('ready', () => {
    client.options.enableOfflineQueue = false;
  });
  // Connection errors also fail the commands that needed the connection, and each caller
  // handles those; without a listener ioredis would print every reconnect attempt.
  client.on('error', () => undefined);
  return client;
}

/**
 * Every key matching `pattern`, by SCAN (never KEYS, which blocks Redis), named as the
 * client's other commands name them. ioredis puts `keyPrefix` before key arguments only:
 * a SCAN MATCH pattern is not one, and the names SCAN returns carry the prefix (ioredis
 * README, "Transparent Key Prefixing"). So the prefix is added to the pattern here and
 * taken off each name.
 */
export async function scanKeys(redis: Redis, pattern: string): Promise<string[]> {
  const prefix = redis.options.keyPrefix ?? '';
  const keys: string[] = [];
  let cursor = '0';
  do {
    const [next, batch] = await redis.scan(cursor, 'MATCH', prefix + pattern, 'COUNT', 500);
    keys.push(...batch.map((key) => key.slice(prefix.length)));
    cursor = next;
  } while (cursor !== '0');
  return keys;
}

// The errors ioredis gives a command when it cannot reach Redis, as ioredis words them.
const UNREACHABLE_MESSAGES = [
  "Stream isn't writeable and enableOfflineQueue options is false", // Redis.sendCommand, offline queue off
  'Command timed out', // Command.setTimeout, commandTimeout passed
  'Connection is closed.', // utils CONNECTION_CLOSED_ERROR_MSG, after quit/disconnect
];
// The socket a stalled Redis left silent, destroyed by `socketTimeout` under the commands sent on it (Redis.setSocketTimeout).
const SOCKET_TIMEOUT = /^Socket timeout\. Expecting data/;
// Replies of a Redis that is up but cannot serve yet: loading its data set after a
// restart, busy running a script, or a replica whose primary is down.
const NOT_SERVING_REPLIES = /^(LOADING|BUSY|MASTERDOWN|TRYAGAIN|CLUSTERDOWN)\b/;

/** True when a Redis command failed because Redis could not serve it, not because it was wrong. */
export function isRedisOutage(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  // MaxRetriesPerRequestError: the connection dropped and the retry failed too (redis/event_handler closeHandler).
  if (error.name === 'MaxRetriesPerRequestError') return true;
  if (UNREACHABLE_MESSAGES.includes(error.message) || SOCKET_TIMEOUT.test(error.message)) return true;
  return error.name === 'ReplyError' && NOT_SERVING_REPLIES.test(error.message);
}
