import type { Redis } from 'ioredis';
import {
  domainEventsChannel, EDGE_CANARY_FIELDS, edgeAgentHash, edgeKeyNames, formatWakeEvent, WAKE_REFUSAL_TTL_SECONDS, WAKE_REFUSED_PREFIX, wakeEventsChannel, type EdgeAgent,
} from '../../contract/edge-keys.js';

/** A custom domain's certificate as the edge serves it (PEM): the chain, leaf first, and its private key. */
export interface DomainCertificate {
  chain: string;
  key: string;
}

/** One active custom hostname of an agent, as the rebuild projects it; a certificate once issued. */
export interface ProjectedDomain {
  slug: string;
  hostname: string;
  chain?: string;
  key?: string;
}

/** KEYS: 1 wake key. ARGV: 1 wake-events channel, 2 the routable event. */
const END_WAKE_SCRIPT = `if redis.call('DEL', KEYS[1]) == 1 then redis.call('PUBLISH', ARGV[1], ARGV[2]) end
return 0`;

export interface ProjectedAgent {
  agent: EdgeAgent;
  keyHashes: string[];
  upstreams: string[];
  /** A running canary's replicas (agent.canary set); none by default. */
  canaryUpstreams?: string[];
  /**
   * The agent's active custom hostnames: its `domains` set becomes exactly these. Absent:
   * the set is left as it is (a caller that does not project domains must not drop them).
   */
  domains?: string[];
}

/**
 * Redis's copy of what the edge needs from Postgres. The control API writes it in the
 * request that changes Postgres; `rebuild` makes it whole again from Postgres, so losing
 * Redis loses only counters.
 */
export class EdgeProjection {
  private readonly wakeEvents: string;
  private readonly domainEvents: string;

  /** `keyPrefix`: REDIS_KEY_PREFIX, which ioredis puts before keys but not before the wake-events and domain-events channels. */
  constructor(private readonly redis: Redis, keyPrefix = '') {
    this.wakeEvents = wakeEventsChannel(keyPrefix);
    this.domainEvents = domainEventsChannel(keyPrefix);
  }

  /**
   * An active custom hostname of the agent: the hash (authz's lookup) and the agent's set
   * (the Check script's proof) in one MULTI, as putAgent writes the index beside the agent.
   * Then the hostname is published, so authz and the local edge read it again.
   */
  async putDomain(slug: string, hostname: string): Promise<void> {
    await this.redis.multi().hset(edgeKeyNames.domainHosts, hostname, slug).sadd(edgeKeyNames.domains(slug), hostname).exec().then(throwOnFailure);
    await this.redis.publish(this.domainEvents, hostname);
  }

  /**
   * Routing stops from the next Check, whatever authz's copy says: the script proves
   * membership in the agent's set, removed here. The certificate goes too.
   */
  async removeDomain(slug: string, hostname: string): Promise<void> {
    await this.redis
      .multi()
      .srem(edgeKeyNames.domains(slug), hostname)
      .hdel(edgeKeyNames.domainHosts, hostname)
      .hdel(edgeKeyNames.certificates, hostname)
      .exec()
      .then(throwOnFailure);
    await this.redis.publish(this.domainEvents, hostname);
  }

  /** The certificate the edge serves for `hostname` (SNI), from new handshakes on. */
  async putCertificate(hostname: string, { chain, key }: DomainCertificate): Promise<void> {
    await this.redis.hset(edgeKeyNames.certificates, hostname, JSON.stringify({ chain, key }));
    await this.redis.publish(this.domainEvents, hostname);
  }

  /** An HTTP-01 challenge's key authorization (RFC 8555 §8.3), answered by the edge for `ttlSeconds`. */
  async putChallenge(token: string, keyAuthorization: string, ttlSeconds: number): Promise<void> {
    await this.redis.set(edgeKeyNames.acmeChallenge(token), keyAuthorization, 'EX', ttlSeconds);
  }

  async removeChallenge(token: string): Promise<void> {
    await this.redis.del(edgeKeyNames.acmeChallenge(token));
  }

  /**
   * Makes `domainHosts`, `certificates` and every agent's `domains` set exactly `domains`
   * (the rebuild), then publishes each hostname whose route or certificate changed. The
   * sets are written first: a hostname leaving stops routing before the hash forgets it,
   * and one arriving routes once authz hears of it, after both writes.
   */
  async replaceDomains(domains: readonly ProjectedDomain[]): Promise<void> {
    const [oldHosts, oldCertificates, indexed] = await Promise.all([
      this.redis.hgetall(edgeKeyNames.domainHosts),
      this.redis.hgetall(edgeKeyNames.certificates),
      this.redis.smembers(edgeKeyNames.index),
    ]);
    const hosts = new Map(domains.map((domain) => [domain.hostname, domain.slug]));
    const certificates = new Map<string, string>();
    for (const { hostname, chain, key } of domains) if (chain && key) certificates.set(hostname, JSON.stringify({ chain, key }));

    const bySlug = new Map<string, string[]>();
    for (const slug of [...indexed, ...Object.values(oldHosts)]) bySlug.set(slug, []);
    for (const [hostname, slug] of hosts) bySlug.set(slug, [...(bySlug.get(slug) ?? []), hostname]);
    for (const [slug, hostnames] of bySlug) await this.setDomainsOf(slug, hostnames);

    await this.replaceHash(edgeKeyNames.domainHosts, hosts);
    await this.replaceHash(edgeKeyNames.certificates, certificates);
    const changed = new Set<string>();
    for (const hostname of new Set([...Object.keys(oldHosts), ...hosts.keys()])) if (oldHosts[hostname] !== hosts.get(hostname)) changed.add(hostname);
    for (const hostname of new Set([...Object.keys(oldCertificates), ...certificates.keys()])) {
      if (oldCertificates[hostname] !== certificates.get(hostname)) changed.add(hostname);
    }
    for (const hostname of changed) await this.redis.publish(this.domainEvents, hostname);
  }

  private async setDomainsOf(slug: string, hostnames: string[]): Promise<void> {
    const multi = this.redis.multi().del(edgeKeyNames.domains(slug));
    if (hostnames.length > 0) multi.sadd(edgeKeyNames.domains(slug), ...hostnames);
    await multi.exec().then(throwOnFailure);
  }

  private async replaceHash(key: string, entries: Map<string, string>): Promise<void> {
    const multi = this.redis.multi().del(key);
    if (entries.size > 0) multi.hset(key, Object.fromEntries(entries));
    await multi.exec().then(throwOnFailure);
  }

  /** The agent's fields; without a canary, a canary's fields and replicas go (HSET alone would leave them). */
  async putAgent(agent: EdgeAgent): Promise<void> {
    const multi = this.redis.multi().hset(edgeKeyNames.agent(agent.slug), edgeAgentHash(agent));
    if (!agent.canary) multi.hdel(edgeKeyNames.agent(agent.slug), ...EDGE_CANARY_FIELDS).del(edgeKeyNames.canaryUpstreams(agent.slug));
    await multi.sadd(edgeKeyNames.index, agent.slug).exec().then(throwOnFailure);
  }

  /** A running canary's replicas (issue 36): its share of requests and its preview go to them. */
  async setCanaryUpstreams(slug: string, addresses: string[]): Promise<void> {
    const multi = this.redis.multi().del(edgeKeyNames.canaryUpstreams(slug));
    if (addresses.length > 0) multi.sadd(edgeKeyNames.canaryUpstreams(slug), ...addresses);
    await multi.exec().then(throwOnFailure);
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
      // The agent's custom hostnames stop routing with it (the script's SISMEMBER); the
      // control API removes their hash entries with the domains themselves.
      .del(edgeKeyNames.agent(slug), edgeKeyNames.keys(slug), edgeKeyNames.upstreams(slug), edgeKeyNames.canaryUpstreams(slug), edgeKeyNames.domains(slug))
      .srem(edgeKeyNames.index, slug)
      .exec()
      .then(throwOnFailure);
  }

  /** Rewrites one agent's projection as given, atomically. */
  async replace({ agent, keyHashes, upstreams, canaryUpstreams = [], domains }: ProjectedAgent): Promise<void> {
    const { slug } = agent;
    const multi = this.redis
      .multi()
      .del(edgeKeyNames.agent(slug), edgeKeyNames.keys(slug), edgeKeyNames.upstreams(slug), edgeKeyNames.canaryUpstreams(slug), ...(domains ? [edgeKeyNames.domains(slug)] : []))
      .hset(edgeKeyNames.agent(agent.slug), edgeAgentHash(agent))
      .sadd(edgeKeyNames.index, agent.slug);
    if (keyHashes.length > 0) multi.sadd(edgeKeyNames.keys(agent.slug), ...keyHashes);
    if (upstreams.length > 0) multi.sadd(edgeKeyNames.upstreams(agent.slug), ...upstreams);
    if (agent.canary && canaryUpstreams.length > 0) multi.sadd(edgeKeyNames.canaryUpstreams(slug), ...canaryUpstreams);
    if (domains && domains.length > 0) multi.sadd(edgeKeyNames.domains(agent.slug), ...domains);
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
