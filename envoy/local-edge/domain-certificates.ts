import { createHash } from 'node:crypto';
import { createSecureContext, type SecureContext, type SecureContextOptions } from 'node:tls';
import type { Redis } from 'ioredis';
import { openEdgeCertificateFeed, parseCertificateValue } from '../../contract/edge-certificate-feed.js';
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

interface Served {
  pair: CertificatePair;
  context: SecureContext;
}

/**
 * The edge's certificate feed (contract/edge-certificate-feed.ts) in memory, as secure
 * contexts. A value that does not parse, or whose key is not the certificate's, is logged
 * (hostname and reason, never the value) and the hostname keeps the pair it had, as the
 * agent domain's files do (certificate-store.ts); a hostname gone from the hash is forgotten.
 */
export function openDomainCertificates(options: DomainCertificatesOptions): DomainCertificates {
  const log = options.log ?? (() => undefined);
  const served = new Map<string, Served>();
  // The digest last refused per hostname: the periodic reload logs a bad value once.
  const refused = new Map<string, string>();

  function apply(hostname: string, value: string | null): void {
    if (value === null) {
      if (served.delete(hostname)) log('custom domain certificate removed', { hostname });
      refused.delete(hostname);
      return;
    }
    const digest = createHash('sha256').update(value).digest('hex');
    if (served.get(hostname)?.pair.digest === digest || refused.get(hostname) === digest) return;
    try {
      const { chain, key } = parseCertificateValue(value);
      const pair = certificatePairOf({ cert: Buffer.from(chain), key: Buffer.from(key), digest });
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

  const feed = openEdgeCertificateFeed({
    redis: options.redis,
    subscriber: options.subscriber,
    keyPrefix: options.keyPrefix,
    reloadIntervalMs: options.reloadIntervalMs,
    onValue: apply,
    onReadError: (reason, hostname) =>
      hostname
        ? log('custom domain certificate not reloaded: the current one stays', { hostname, reason })
        : log('custom domain certificates not reloaded: the current ones stay', { reason }),
  });

  return {
    contextFor: (hostname) => served.get(hostname)?.context,
    loaded: feed.loaded,
    reload: feed.reload,
    close: feed.close,
  };
}
