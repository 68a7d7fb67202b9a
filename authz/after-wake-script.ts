import type { Redis } from 'ioredis';
import { WAKE_REFUSED_PREFIX } from '../contract/edge-keys.js';

/**
 * What a Check held for a parked agent does when woken (authz/wake-waiter.ts), in one
 * round trip: take a replica and count the request's usage (the Check script left it
 * uncounted, so a request is counted once, and only if it goes on), or report a refused
 * wake. The rate limits and the key were checked by the Check script already.
 *
 * KEYS: 1 upstream set, 2 usage counter, 3 wake key (all hash-tagged with the slug).
 * ARGV: 1 WAKE_REFUSED_PREFIX.
 * Returns { 'allowed', upstream } | { 'wake_refused', body } | { 'waiting' }.
 */
export const AFTER_WAKE_SCRIPT = `
local upstream = redis.call('SRANDMEMBER', KEYS[1])
if upstream then
  redis.call('INCR', KEYS[2])
  return {'allowed', upstream}
end
local wake = redis.call('GET', KEYS[3])
if wake and string.sub(wake, 1, #ARGV[1]) == ARGV[1] then return {'wake_refused', string.sub(wake, #ARGV[1] + 1)} end
return {'waiting'}
`;

export interface AfterWakeKeys {
  upstreams: string;
  usage: string;
  wake: string;
}

export type AfterWake = { outcome: 'allowed'; upstream: string } | { outcome: 'wake_refused'; body: string } | { outcome: 'waiting' };

export type RunAfterWakeScript = (keys: AfterWakeKeys) => Promise<AfterWake>;

const COMMAND_NAME = 'edgeAfterWake';

interface RedisWithAfterWakeScript {
  [COMMAND_NAME](...keysThenArgs: string[]): Promise<unknown>;
}

/** Registers the script on `redis` (EVALSHA, EVAL on NOSCRIPT) and returns its runner. */
export function defineAfterWakeScript(redis: Redis): RunAfterWakeScript {
  if (!(COMMAND_NAME in redis)) redis.defineCommand(COMMAND_NAME, { numberOfKeys: 3, lua: AFTER_WAKE_SCRIPT });
  const client = redis as unknown as RedisWithAfterWakeScript;
  return async ({ upstreams, usage, wake }) => {
    const reply = await client[COMMAND_NAME](upstreams, usage, wake, WAKE_REFUSED_PREFIX);
    if (!Array.isArray(reply) || typeof reply[0] !== 'string') throw new Error(`after-wake script returned an unexpected reply: ${JSON.stringify(reply)}`);
    const [outcome, detail] = reply as [string, string | undefined];
    if (outcome === 'allowed') return { outcome, upstream: detail ?? '' };
    if (outcome === 'wake_refused') return { outcome, body: detail ?? '' };
    return { outcome: 'waiting' };
  };
}
