import type { Redis } from 'ioredis';
import { edgeAgentHash, edgeKeyNames, type EdgeAgent } from '../../contract/edge-keys.js';

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
  constructor(private readonly redis: Redis) {}

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
