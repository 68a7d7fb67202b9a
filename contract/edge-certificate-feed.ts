import type { Redis } from 'ioredis';
import { domainEventsChannel, edgeKeyNames } from './edge-keys.js';
import { withDeadline } from './deadline.js';

/**
 * The custom hostnames' certificates of the edge projection (`edgeKeyNames.certificates`,
 * written by control/edge/projection.ts putCertificate) as a stream of changes, for whoever
 * serves them: the local edge's HTTPS port and authz's xDS server. Loaded with HGETALL,
 * each hostname read again (HGET) on its `domainEventsChannel` message, and the whole hash
 * again every `reloadIntervalMs` and on each (re)connection of the subscriber, since
 * pub/sub drops what is published while it is away.
 */
export interface EdgeCertificateFeedOptions {
  /** A client of the installation's Redis (REDIS_KEY_PREFIX as its keyPrefix). */
  redis: Redis;
  /** A connection of its own, put in subscriber mode here; disconnected by close(). */
  subscriber: Redis;
  keyPrefix: string;
  /** A full reload this often, for messages pub/sub lost; default 60 s. */
  reloadIntervalMs?: number;
  /** A hostname's value as stored, or null once it is gone. Called for every read, changed or not. */
  onValue(hostname: string, value: string | null): void;
  /** A read that failed: what was delivered stays. Never carries a value. */
  onReadError(reason: string, hostname?: string): void;
}

export interface EdgeCertificateFeed {
  /** The first load, settled (delivered or failed). */
  readonly loaded: Promise<void>;
  reload(): Promise<void>;
  close(): void;
}

/** Off any request's path: a hash of certificates may take longer than a Check. */
const READ_DEADLINE_MS = 2_000;

export function openEdgeCertificateFeed(options: EdgeCertificateFeedOptions): EdgeCertificateFeed {
  const channel = domainEventsChannel(options.keyPrefix);
  const delivered = new Set<string>();
  let closed = false;

  const deliver = (hostname: string, value: string | null) => {
    if (closed) return;
    if (value === null) delivered.delete(hostname);
    else delivered.add(hostname);
    options.onValue(hostname, value);
  };

  async function reload(): Promise<void> {
    try {
      const all = await withDeadline(options.redis.hgetall(edgeKeyNames.certificates), READ_DEADLINE_MS);
      for (const hostname of [...delivered]) if (!(hostname in all)) deliver(hostname, null);
      for (const [hostname, value] of Object.entries(all)) deliver(hostname, value);
    } catch (error) {
      if (!closed) options.onReadError((error as Error).message);
    }
  }

  async function refreshOne(hostname: string): Promise<void> {
    try {
      deliver(hostname, await withDeadline(options.redis.hget(edgeKeyNames.certificates, hostname), READ_DEADLINE_MS));
    } catch (error) {
      if (!closed) options.onReadError((error as Error).message, hostname);
    }
  }

  options.subscriber.on('message', (from: string, hostname: string) => {
    if (from === channel && !closed) void refreshOne(hostname);
  });
  options.subscriber.on('error', () => undefined);
  options.subscriber.on('ready', () => {
    void options.subscriber.subscribe(channel).catch(() => undefined);
    void reload();
  });
  void options.subscriber.subscribe(channel).catch(() => undefined);
  const loaded = reload();
  const timer = setInterval(() => void reload(), options.reloadIntervalMs ?? 60_000);
  timer.unref();

  return {
    loaded,
    reload,
    close() {
      closed = true;
      clearInterval(timer);
      options.subscriber.disconnect();
    },
  };
}

/**
 * A stored value, JSON `{chain, key}` (control/edge/projection.ts putCertificate). JSON.parse's
 * own message quotes the text it choked on, which holds a private key: never pass it on.
 */
export function parseCertificateValue(value: string): { chain: string; key: string } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    throw new Error('the value is not JSON {chain, key}');
  }
  const { chain, key } = (parsed ?? {}) as { chain?: unknown; key?: unknown };
  if (typeof chain !== 'string' || typeof key !== 'string') throw new Error('the value lacks the strings chain and key');
  return { chain, key };
}
