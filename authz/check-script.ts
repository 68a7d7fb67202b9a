import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';
import { batchWritesPerTurn } from './write-batching.js';
import { EDGE_AGENT_FIELDS, WAKE_REFUSED_PREFIX, WAKE_REQUESTED } from '../contract/edge-keys.js';

/**
 * The steps 1–6 of docs/contract.md ("Order of checks") as one Lua script, so a Check is one Redis round trip and
 * the steps see one consistent projection. Every key arrives in KEYS (all hash-tagged
 * with the slug), so the script runs unchanged on Redis Cluster.
 *
 * KEYS: 1 agent hash, 2 key-hash set, 3 upstream set, 4 caller counter, 5 agent counter,
 *       6 usage counter, 7 wake key, 8 the agent's custom hostnames (edgeKeyNames.domains),
 *       9 the canary's upstream set (edgeKeyNames.canaryUpstreams).
 * ARGV: 1 SHA-256 hex of the access key ('' when none), 2 counter TTL in seconds,
 *       3 wake key TTL in seconds (the wake timeout), 4 WAKE_REQUESTED, 5 WAKE_REFUSED_PREFIX,
 *       6 the custom hostname the request came through ('' for the platform hostname),
 *       7 the canary deployment a preview hostname names ('' for none),
 *       8 this request's random bucket, 0 to 99, 9 and 10 the caller's bucket seeds (31-bit
 *       hashes of its key, else its address; and of its address), for the canary's split.
 * Returns { outcome [, agent id, upstream | 'requested' | refusal body [, 'stable' | 'canary']] }.
 */
export const CHECK_SCRIPT = `
-- A custom hostname routes only while the agent's set names it: authz found the slug in its
-- in-memory copy, which may lag a deletion; this set is written in the same MULTI as the
-- deletion, so a removed domain answers 404 from the next Check, and spends no limit.
if ARGV[6] ~= '' and redis.call('SISMEMBER', KEYS[8], ARGV[6]) == 0 then return {'unknown_agent'} end
local agent = redis.call('HMGET', KEYS[1], '${EDGE_AGENT_FIELDS.id}', '${EDGE_AGENT_FIELDS.access}', '${EDGE_AGENT_FIELDS.callerRpm}', '${EDGE_AGENT_FIELDS.agentRpm}', '${EDGE_AGENT_FIELDS.wakeable}',
  '${EDGE_AGENT_FIELDS.canaryDeployment}', '${EDGE_AGENT_FIELDS.canaryPercent}', '${EDGE_AGENT_FIELDS.canaryAffinity}')
if not agent[1] then return {'unknown_agent'} end
-- A preview hostname names a deployment: only the canary running now has one, so any other
-- (promoted, aborted, never a canary) is unknown, before any limit is spent.
if ARGV[7] ~= '' and agent[6] ~= ARGV[7] then return {'unknown_agent'} end
local caller_rpm = tonumber(agent[3])
local agent_rpm = tonumber(agent[4])
if not caller_rpm or not agent_rpm then
  return redis.error_reply('edge projection of ' .. KEYS[1] .. ' lacks caller_rpm or agent_rpm')
end

-- Counted before the key check (docs/contract.md: the per-caller limit comes first), so a caller
-- guessing keys is throttled like any other.
local caller_count = redis.call('INCR', KEYS[4])
if caller_count == 1 then redis.call('EXPIRE', KEYS[4], ARGV[2]) end
if caller_count > caller_rpm then return {'caller_rate_limited'} end

-- Anything but 'public' needs a key: an unexpected value fails closed.
if agent[2] ~= 'public' then
  if ARGV[1] == '' or redis.call('SISMEMBER', KEYS[2], ARGV[1]) == 0 then return {'invalid_key'} end
end

-- Only requests that passed the steps above use the agent's allowance.
local agent_count = redis.call('INCR', KEYS[5])
if agent_count == 1 then redis.call('EXPIRE', KEYS[5], ARGV[2]) end
if agent_count > agent_rpm then return {'agent_rate_limited'} end

-- The canary's share (issue 36), decided here so the split costs no round trip. A preview
-- goes to the canary alone; otherwise the request's bucket, or with caller affinity the
-- caller's (its seed moved by the deployment number, so the same callers are not always the
-- canary's), below percent. An empty canary set sends everything to the stable version.
local version = 'stable'
local upstream
if ARGV[7] ~= '' then
  upstream = redis.call('SRANDMEMBER', KEYS[9])
  if not upstream then return {'no_replica'} end
  version = 'canary'
else
  local percent = tonumber(agent[7])
  if percent and percent > 0 then
    local bucket = tonumber(ARGV[8])
    -- A public agent checks no key, so a caller could pick its version by the key it sends: its address decides.
    local seed = agent[2] == 'public' and ARGV[10] or ARGV[9]
    if agent[8] == 'caller' then bucket = (tonumber(seed) + tonumber(agent[6]) * 7919) % 100 end
    if bucket < percent then
      upstream = redis.call('SRANDMEMBER', KEYS[9])
      if upstream then version = 'canary' end
    end
  end
  if not upstream then upstream = redis.call('SRANDMEMBER', KEYS[3]) end
end
if not upstream then
  if agent[5] ~= '1' then return {'no_replica'} end
  -- Parked (docs/contract.md, "Wake"): the first Check sets the wake key, later ones share its wake.
  -- Not counted in usage yet: the after-wake script counts it when it forwards.
  if redis.call('SET', KEYS[7], ARGV[4], 'NX', 'EX', ARGV[3]) then return {'parked', agent[1], 'requested'} end
  local wake = redis.call('GET', KEYS[7])
  if wake and string.sub(wake, 1, #ARGV[5]) == ARGV[5] then return {'wake_refused', agent[1], string.sub(wake, #ARGV[5] + 1)} end
  return {'parked', agent[1], ''}
end

redis.call('INCR', KEYS[6])
return {'allowed', agent[1], upstream, version}
`;

/** SHA-1 of the script, as EVALSHA and SCRIPT LOAD name it. */
export const CHECK_SCRIPT_SHA = createHash('sha1').update(CHECK_SCRIPT).digest('hex');

/** The KEYS the script takes (checkScriptKeysThenArgs lists them). */
export const CHECK_SCRIPT_KEY_COUNT = 9;

export interface CheckScriptKeys {
  agent: string;
  keys: string;
  upstreams: string;
  callerCounter: string;
  agentCounter: string;
  usage: string;
  wake: string;
  /** edgeKeyNames.domains(slug): read only when `customHost` is set. */
  domains: string;
  /** edgeKeyNames.canaryUpstreams(slug): read only while a canary runs. */
  canaryUpstreams: string;
}

export interface CheckScriptArgs {
  keyHash: string;
  counterTtlSeconds: number;
  wakeTtlSeconds: number;
  /** The custom hostname the request named, '' for the platform hostname. */
  customHost: string;
  /** The canary deployment a preview hostname names, '' for none. */
  previewDeployment: string;
  /** 0 to 99, drawn per request: the canary's share without caller affinity. */
  randomBucket: number;
  /** A 31-bit hash of the caller's key, else its address: the canary's share with caller affinity. */
  callerSeed: number;
  /** The same of its address alone, for a public agent. */
  addressSeed: number;
}

/**
 * The third element: the upstream when allowed, 'requested' when parked and this Check set
 * the wake, a refusal's body. The fourth, when allowed: the version it goes to.
 */
export type CheckScriptReply = [outcome: string, agentId?: string, detail?: string, version?: string];

/** Runs the check script with one EVALSHA (ioredis resends it with the script on NOSCRIPT). */
export type RunCheckScript = (keys: CheckScriptKeys, args: CheckScriptArgs) => Promise<CheckScriptReply>;

const COMMAND_NAME = 'edgeCheck';

interface RedisWithCheckScript {
  [COMMAND_NAME](...keysThenArgs: (string | number)[]): Promise<unknown>;
}

/**
 * Registers the script on `redis` (ioredis defineCommand: EVALSHA, falling back to EVAL
 * when Redis answers NOSCRIPT after a restart or SCRIPT FLUSH) and returns its runner.
 */
export function defineCheckScript(redis: Redis): RunCheckScript {
  if (!(COMMAND_NAME in redis)) redis.defineCommand(COMMAND_NAME, { numberOfKeys: CHECK_SCRIPT_KEY_COUNT, lua: CHECK_SCRIPT });
  const client = redis as unknown as RedisWithCheckScript;
  const batchWrite = batchWritesPerTurn(redis);
  return async (keys, args) => {
    batchWrite();
    return parseReply(await client[COMMAND_NAME](...checkScriptKeysThenArgs(keys, args)));
  };
}


/** KEYS then ARGV of one run of the script, in the order it reads them (also what bench/authz.bench.ts gives redis-benchmark). */
export function checkScriptKeysThenArgs(keys: CheckScriptKeys, args: CheckScriptArgs): (string | number)[] {
  return [
    keys.agent, keys.keys, keys.upstreams, keys.callerCounter, keys.agentCounter, keys.usage, keys.wake, keys.domains, keys.canaryUpstreams,
    args.keyHash, args.counterTtlSeconds, args.wakeTtlSeconds, WAKE_REQUESTED, WAKE_REFUSED_PREFIX, args.customHost,
    args.previewDeployment, args.randomBucket, args.callerSeed, args.addressSeed,
  ];
}

function parseReply(reply: unknown): CheckScriptReply {
  if (!Array.isArray(reply) || typeof reply[0] !== 'string') {
    throw new Error(`check script returned an unexpected reply: ${JSON.stringify(reply)}`);
  }
  return reply as CheckScriptReply;
}
