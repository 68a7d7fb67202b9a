import { createHash } from 'node:crypto';
import { createSecureContext, type SecureContext, type SecureContextOptions } from 'node:tls';
import type { Redis } from 'ioredis';
import { domainEventsChannel, edgeKeyNames } from '../../contract/edge-keys.js';
import { withDeadline } from '../../contract/deadline.js';
import { certificatePairOf, describePair, type CertificatePair } from './certificate-pair.js';
import type { EdgeLog } from './certificate-store.js';

export interface DomainCertificatesOptions {
  /** A client of the installation's Redis (REDIS_KEY_PREFIX as its keyPrefix): HGETALL and HGET of `certificates`. */
  redis: Redis;
  /** A connection of its own, put in subscriber mode here. */
  subscriber: Redis;
  keyPrefix: string;
  /** Every context's TLS settings but the certificate (tls-policy.ts). */
  policy: SecureContextOptions;
  /** A full reload this often, for messages pub/sub lost; default 60 s. */
  reloadIntervalMs?: number;
  log?: EdgeLog;
}

/** The custom hostnames' certificates the HTTPS port serves by SNI (the certificate store asks first). */
export interface DomainCertificates {
  /** The context for exactly this hostname (lowercase), or undefined: the agent domain's then. */
  contextFor(hostname: string): SecureContext | undefined;
  /** The first load, settled (applied or failed) before the edge takes handshakes. */
  readonly loaded: Promise<void>;
  reload(): Promise<void>;
  close(): void;
}

/** Off any request's path: a hash of certificates may take longer than a Check. */
const READ_DEADLINE_MS = 2_000;

interface Served {
  pair: CertificatePair;
  context: SecureContext;
}

/**
 * `edgeKeyNames.certificates` in memory, as secure contexts: loaded with HGETALL, each
 * hostname read again (HGET) on its `domainEventsChannel` message, and the whole hash
 * again every `reloadIntervalMs` and on each (re)connection of the subscriber. A value
 * that does not parse, or whose key is not the certificate's, is logged (hostname and
 * reason, never the value) and the hostname keeps the pair it had, as the agent domain's
 * files do (certificate-store.ts); a hostname gone from the hash is forgotten.
 */
export function openDomainCertificates(options: DomainCertificatesOptions): DomainCertificates {
  const log = options.log ?? (() => undefined);
  const channel = domainEventsChannel(options.keyPrefix);
  const served = new Map<string, Served>();
  // The digest last refused per hostname: the periodic reload logs a bad value once.
  const refused = new Map<string, string>();
  let closed = false;

  function apply(hostname: string, value: string | null): void {
    if (value === null) {
      if (served.delete(hostname)) log('custom domain certificate removed', { hostname });
      refused.delete(hostname);
      return;
    }
    const digest = createHash('sha256').update(value).digest('hex');
    if (served.get(hostname)?.pair.digest === digest || refused.get(hostname) === digest) return;
    try {
      const pair = certificatePairOf({ ...parsePem(value), digest });
      served.set(hostname, { pair, context: createSecureContext({ ...options.policy, cert: pair.cert, key: pair.key }) });
      refused.delete(hostname);
      log('custom domain certificate loaded', { hostname, ...describePair(pair) });
    } catch (error) {
      refused.set(hostname, digest);
      const current = served.get(hostname);
      log('custom domain certificate refused: the current one stays', {
        hostname,
        reason: (error as Error).message,
        serving: current ? current.pair.leaf.serialNumber : 'the agent domain certificate',
      });
    }
  }

  async function reload(): Promise<void> {
    try {
      const all = await withDeadline(options.redis.hgetall(edgeKeyNames.certificates), READ_DEADLINE_MS);
      if (closed) return;
      for (const hostname of [...served.keys()]) if (!(hostname in all)) apply(hostname, null);
      for (const [hostname, value] of Object.entries(all)) apply(hostname, value);
    } catch (error) {
      log('custom domain certificates not reloaded: the current ones stay', { reason: (error as Error).message });
    }
  }

  async function refreshOne(hostname: string): Promise<void> {
    try {
      const value = await withDeadline(options.redis.hget(edgeKeyNames.certificates, hostname), READ_DEADLINE_MS);
      if (!closed) apply(hostname, value);
    } catch (error) {
      log('custom domain certificate not reloaded: the current one stays', { hostname, reason: (error as Error).message });
    }
  }

  options.subscriber.on('message', (from: string, hostname: string) => {
    if (from === channel && !closed) void refreshOne(hostname);
  });
  options.subscriber.on('error', () => undefined);
  // Messages published while the subscriber was away are lost: read everything again.
  options.subscriber.on('ready', () => {
    void options.subscriber.subscribe(channel).catch(() => undefined);
    void reload();
  });
  void options.subscriber.subscribe(channel).catch(() => undefined);
  const loaded = reload();
  const timer = setInterval(() => void reload(), options.reloadIntervalMs ?? 60_000);
  timer.unref();

  return {
    contextFor: (hostname) => served.get(hostname)?.context,
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
 * The hash value, JSON `{chain, key}` (control/edge/projection.ts putCertificate). JSON.parse's
 * own message quotes the text it choked on, which holds a private key: never pass it on.
 */
function parsePem(value: string): { cert: Buffer; key: Buffer } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    throw new Error('the value is not JSON {chain, key}');
  }
  const { chain, key } = (parsed ?? {}) as { chain?: unknown; key?: unknown };
  if (typeof chain !== 'string' || typeof key !== 'string') throw new Error('the value lacks the strings chain and key');
  return { cert: Buffer.from(chain), key: Buffer.from(key) };
}
