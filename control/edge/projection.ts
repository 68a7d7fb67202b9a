import type { Redis } from 'ioredis';
import {
  edgeAgentHash, edgeKeyNames, formatWakeEvent, WAKE_REFUSAL_TTL_SECONDS, WAKE_REFUSED_PREFIX, wakeEventsChannel, type EdgeAgent,
} from '../../contract/edge-keys.js';

/** KEYS: 1 wake key. ARGV: 1 wake-events channel, 2 the routable event. */
const END_WAKE_SCRIPT = `if redis.call('DEL', KEYS[1]) == 1 then redis.call('PUBLISH', ARGV[1], ARGV[2]) end
return 0`;

export interface ProjectedAgent {
  agent: EdgeAgent;
  keyHashes: string[];
  upstreams: string[];
}

/**
 * Redis's copy of what the edge needs from Postgres. The control API writes it in the
 * request that changes Postgres; `rebuild` makes it whole again from Postgres, so losing
 * Redis loses only counters.
 */
export class EdgeProjection {
  private readonly wakeEvents: string;

  /** `keyPrefix`: REDIS_KEY_PREFIX, which ioredis puts before keys but not before the wake-events channel. */
  constructor(private readonly redis: Redis, keyPrefix = '') {
    this.wakeEvents = wakeEventsChannel(keyPrefix);
  }

  async putAgent(agent: EdgeAgent): Promise<void> {
    await this.redis
      .multi()
      .hset(edgeKeyNames.agent(agent.slug), edgeAgentHash(agent))
      .sadd(edgeKeyNames.index, agent.slug)
      .exec()
      .then(throwOnFailure);
  }

  async addKey(slug: string, keyHash: string): Promise<void> {
    await this.redis.sadd(edgeKeyNames.keys(slug), keyHash);
  }

  async removeKey(slug: string, keyHash: string): Promise<void> {
    await this.redis.srem(edgeKeyNames.keys(slug), keyHash);
  }

  async setUpstreams(slug: string, addresses: string[]): Promise<void> {
    const multi = this.redis.multi().del(edgeKeyNames.upstreams(slug));
    if (addresses.length > 0) multi.sadd(edgeKeyNames.upstreams(slug), ...addresses);
    await multi.exec().then(throwOnFailure);
    if (addresses.length > 0) await this.endWake(slug);
  }

  /**
   * A wake the control API could not do: Checks waiting for it answer 503 with `body`, and
   * Checks arriving in the next WAKE_REFUSAL_TTL_SECONDS at once, without another wake.
   */
  async refuseWake(slug: string, body: string): Promise<void> {
    await this.redis
      .multi()
      .set(edgeKeyNames.wake(slug), WAKE_REFUSED_PREFIX + body, 'EX', WAKE_REFUSAL_TTL_SECONDS)
      .publish(this.wakeEvents, formatWakeEvent({ event: 'refused', slug }))
      .exec()
      .then(throwOnFailure);
  }

  /**
   * With a replica in the set, a wake is over: the next parking needs a new one, and Checks
   * held for it (authz subscribes to the channel) read the set again. Run after the set is
   * written, so a Check woken by it finds the replica; published only when a wake was in
   * progress, so the reconciler's rewrites of every agent cost authz nothing.
   */
  private async endWake(slug: string): Promise<void> {
    await this.redis.eval(END_WAKE_SCRIPT, 1, edgeKeyNames.wake(slug), this.wakeEvents, formatWakeEvent({ event: 'routable', slug }));
  }

  async removeAgent(slug: string): Promise<void> {
    await this.redis
      .multi()
      .del(edgeKeyNames.agent(slug), edgeKeyNames.keys(slug), edgeKeyNames.upstreams(slug))
      .srem(edgeKeyNames.index, slug)
      .exec()
      .then(throwOnFailure);
  }

  /** Rewrites one agent's projection as given, atomically. */
  async replace({ agent, keyHashes, upstreams }: ProjectedAgent): Promise<void> {
    const multi = this.redis
      .multi()
      .del(edgeKeyNames.agent(agent.slug), edgeKeyNames.keys(agent.slug), edgeKeyNames.upstreams(agent.slug))
      .hset(edgeKeyNames.agent(agent.slug), edgeAgentHash(agent))
      .sadd(edgeKeyNames.index, agent.slug);
    if (keyHashes.length > 0) multi.sadd(edgeKeyNames.keys(agent.slug), ...keyHashes);
    if (upstreams.length > 0) multi.sadd(edgeKeyNames.upstreams(agent.slug), ...upstreams);
    await multi.exec().then(throwOnFailure);
    if (upstreams.length > 0) await this.endWake(agent.slug);
  }

  /** Removes every projected agent whose slug is not in `keep`. */
  async prune(keep: Set<string>): Promise<void> {
    for (const slug of await this.redis.smembers(edgeKeyNames.index)) if (!keep.has(slug)) await this.removeAgent(slug);
  }
}

/** MULTI reports a failed command in its results instead of rejecting. */
function throwOnFailure(results: [Error | null, unknown][] | null): void {
  const failure = results?.find(([error]) => error)?.[0];
  if (failure) throw failure;
  if (results === null) throw new Error('Redis transaction was aborted');
}
