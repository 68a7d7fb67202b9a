import type { Redis } from 'ioredis';
import { domainEventsChannel, edgeKeyNames } from '../contract/edge-keys.js';
import { withDeadline } from '../contract/deadline.js';
import type { CustomHostLookup } from './host-routes.js';

export interface DomainHostsDeps {
  /** The client Checks use: HGETALL and HGET of `edgeKeyNames.domainHosts`. */
  redis: Redis;
  /** authz's one subscriber connection (shared with the wake waiter): told of each changed hostname. */
  subscriber: Redis;
  keyPrefix: string;
  /** A full reload this often, for messages pub/sub lost (it delivers at most once). */
  reloadIntervalMs: number;
  onRedisError: (error: Error) => void;
}

/** authz's in-memory copy of the custom hostnames, so finding a Check's slug costs no round trip. */
export interface DomainHosts extends CustomHostLookup {
  /** Reads the whole hash again; resolves once applied (or once it failed, reported to onRedisError). */
  reload(): Promise<void>;
  /** The first load: settled (applied or failed) when the copy is as good as authz can make it at start. */
  readonly loaded: Promise<void>;
  close(): void;
}

/**
 * Off any Check's path, so not AUTHZ_REDIS_TIMEOUT_MS: a whole hash of hostnames may take
 * longer than one Check's round trip, and a late copy costs only routing freshness.
 */
const READ_DEADLINE_MS = 2_000;

/** Reloaded whole this often besides the channel's messages (issue 34). */
export const DOMAIN_HOSTS_RELOAD_MS = 60_000;

/**
 * Loaded with HGETALL at start, kept current by `domainEventsChannel` (each message a
 * hostname: HGET it, add or forget it), and reloaded whole every `reloadIntervalMs` and
 * whenever the subscriber (re)connects, since messages published while it was away are
 * gone. The copy only narrows routing, never widens it: the Check script proves the
 * hostname is still in the agent's `domains` set, so a stale entry costs a 404, not access.
 */
export function openDomainHosts(deps: DomainHostsDeps): DomainHosts {
  const channel = domainEventsChannel(deps.keyPrefix);
  let hosts = new Map<string, string>();
  // Hostnames told while a full reload is in flight: its HGETALL may predate their change,
  // so each is read again once the reload is applied (same connection, so a later read).
  let changedDuringReload: Set<string> | null = null;
  let closed = false;

  const read = <T>(command: Promise<T>) => withDeadline(command, READ_DEADLINE_MS);

  async function refreshOne(hostname: string): Promise<void> {
    try {
      const slug = await read(deps.redis.hget(edgeKeyNames.domainHosts, hostname));
      if (slug === null) hosts.delete(hostname);
      else hosts.set(hostname, slug);
    } catch (error) {
      // The next full reload repairs it.
      deps.onRedisError(error as Error);
    }
  }

  async function reload(): Promise<void> {
    if (changedDuringReload) return; // one in flight already reads everything
    changedDuringReload = new Set();
    try {
      const all = await read(deps.redis.hgetall(edgeKeyNames.domainHosts));
      hosts = new Map(Object.entries(all));
    } catch (error) {
      deps.onRedisError(error as Error);
    } finally {
      const again = changedDuringReload;
      changedDuringReload = null;
      await Promise.all([...again].map(refreshOne));
    }
  }

  const onMessage = (from: string, hostname: string) => {
    if (from !== channel || closed) return;
    changedDuringReload?.add(hostname);
    void refreshOne(hostname);
  };
  deps.subscriber.on('message', onMessage);
  // Subscribed again on every connection, and reloaded: what was published meanwhile is lost.
  const onReady = () => {
    void deps.subscriber.subscribe(channel).catch(() => undefined);
    void reload();
  };
  deps.subscriber.on('ready', onReady);
  void deps.subscriber.subscribe(channel).catch(() => undefined);
  const loaded = reload();
  const timer = setInterval(() => void reload(), deps.reloadIntervalMs);
  timer.unref();

  return {
    slugOf: (hostname) => hosts.get(hostname),
    reload,
    loaded,
    close() {
      closed = true;
      clearInterval(timer);
      deps.subscriber.off('message', onMessage);
      deps.subscriber.off('ready', onReady);
    },
  };
}
