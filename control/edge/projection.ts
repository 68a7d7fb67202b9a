import type { Redis } from 'ioredis';

/** What the edge must know of one agent to answer a request without asking Postgres. */
export interface EdgeAgent {
  id: string;
  accountId: string;
  slug: string;
  access: 'public' | 'private';
  /** The agent's rate_limit_rpm, or the default 120. */
  callerRpm: number;
  /** The plan's per-agent limit (max_agent_rpm). */
  agentRpm: number;
}

export const DEFAULT_CALLER_RPM = 120;

/**
 * Key names shared with authz (authz/ reads them in one Lua script). Every key is
 * hash-tagged with the slug: the edge knows only the hostname, and the slug, one to one
 * with the agent id, is what it can derive from it, so all of an agent's keys live in
 * one Redis Cluster slot.
 */
export const edgeKeys = {
  agent: (slug: string) => `edge:agent:{${slug}}`,
  keys: (slug: string) => `edge:keys:{${slug}}`,
  upstreams: (slug: string) => `edge:upstreams:{${slug}}`,
  usage: (slug: string, month: string) => `edge:usage:{${slug}}:${month}`,
  /** Not hash-tagged: an index of projected slugs, read only when rebuilding. */
  index: 'edge:slugs',
};

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
      .hset(edgeKeys.agent(agent.slug), fieldsOf(agent))
      .sadd(edgeKeys.index, agent.slug)
      .exec()
      .then(throwOnFailure);
  }

  async addKey(slug: string, keyHash: string): Promise<void> {
    await this.redis.sadd(edgeKeys.keys(slug), keyHash);
  }

  async removeKey(slug: string, keyHash: string): Promise<void> {
    await this.redis.srem(edgeKeys.keys(slug), keyHash);
  }

  async setUpstreams(slug: string, addresses: string[]): Promise<void> {
    const multi = this.redis.multi().del(edgeKeys.upstreams(slug));
    if (addresses.length > 0) multi.sadd(edgeKeys.upstreams(slug), ...addresses);
    await multi.exec().then(throwOnFailure);
  }

  async removeAgent(slug: string): Promise<void> {
    await this.redis
      .multi()
      .del(edgeKeys.agent(slug), edgeKeys.keys(slug), edgeKeys.upstreams(slug))
      .srem(edgeKeys.index, slug)
      .exec()
      .then(throwOnFailure);
  }

  /** Rewrites one agent's projection as given, atomically. */
  async replace({ agent, keyHashes, upstreams }: ProjectedAgent): Promise<void> {
    const multi = this.redis
      .multi()
      .del(edgeKeys.agent(agent.slug), edgeKeys.keys(agent.slug), edgeKeys.upstreams(agent.slug))
      .hset(edgeKeys.agent(agent.slug), fieldsOf(agent))
      .sadd(edgeKeys.index, agent.slug);
    if (keyHashes.length > 0) multi.sadd(edgeKeys.keys(agent.slug), ...keyHashes);
    if (upstreams.length > 0) multi.sadd(edgeKeys.upstreams(agent.slug), ...upstreams);
    await multi.exec().then(throwOnFailure);
  }

  /** Removes every projected agent whose slug is not in `keep`. */
  async prune(keep: Set<string>): Promise<void> {
    for (const slug of await this.redis.smembers(edgeKeys.index)) if (!keep.has(slug)) await this.removeAgent(slug);
  }
}

const fieldsOf = (agent: EdgeAgent) => ({
  id: agent.id,
  account: agent.accountId,
  access: agent.access,
  caller_rpm: String(agent.callerRpm),
  agent_rpm: String(agent.agentRpm),
});

/** MULTI reports a failed command in its results instead of rejecting. */
function throwOnFailure(results: [Error | null, unknown][] | null): void {
  const failure = results?.find(([error]) => error)?.[0];
  if (failure) throw failure;
  if (results === null) throw new Error('Redis transaction was aborted');
}
