import { watch, type FSWatcher } from 'node:fs';
import { dirname } from 'node:path';
import { createSecureContext, type SecureContext, type SecureContextOptions } from 'node:tls';
import { certificatePairOf, describePair, loadCertificatePair, readPairBytes, type CertificateFiles, type CertificatePair } from './certificate-pair.js';

/** How the edge reports what happens to its certificates (main.ts: JSON lines on stdout). */
export type EdgeLog = (msg: string, fields?: Record<string, unknown>) => void;

export interface CertificateStoreOptions extends CertificateFiles {
  /** Every context's TLS settings but the certificate (tls-policy.ts). */
  readonly policy: SecureContextOptions;
  /**
   * How often the files are looked at besides the directory watch, which can miss a
   * change (a directory replaced whole, a file system without inotify). Default 5 s.
   */
  readonly checkIntervalMs?: number;
  readonly log?: EdgeLog;
  /** Custom domains' certificates by exact hostname (domain-certificates.ts), asked before the agent domain's. */
  readonly customDomains?: { contextFor(hostname: string): SecureContext | undefined };
}

/**
 * The certificates the HTTPS server answers with, chosen by the name a client asks for
 * (SNI): a custom domain's own, by exact name, when `customDomains` has one; else the
 * agent domain's wildcard, from the operator's files, which also answers clients that send
 * no name (as Envoy's DefaultTlsCertificateSelector::findTlsContext: exact name first, then
 * the wildcard, then the first certificate; envoy/README.md, "HTTPS").
 */
export interface CertificateStore {
  /** The context for a ClientHello naming `servername` (the server's SNICallback). */
  select(servername: string): SecureContext;
  /** The agent domain's pair as options, for `server.setSecureContext` (clients without SNI). */
  defaultContextOptions(): SecureContextOptions;
  /** The pair served now. */
  current(): CertificatePair;
  /** Called after each swap to a new pair. */
  onChange(listener: () => void): void;
  /** Reads the files now, as the watch and the timer do; resolves once that is done. */
  check(): Promise<void>;
  close(): void;
}

/** A burst of events (a certificate and a key moved in one after the other) makes one check. */
const SETTLE_MS = 100;

/**
 * Loads the pair (a pair that cannot be served stops the edge from starting) and keeps
 * it current: a change in either file's directory, or the periodic check, reads both
 * again, and a pair that reads and matches replaces the old one for new handshakes.
 * Connections already open keep the context they were made with. A pair that cannot be
 * served (half replaced: the new certificate beside the old key) is logged and the old
 * one stays, as Envoy keeps its secret when a reload fails (sds_api.cc,
 * SdsApi::onWatchUpdate: key_rotation_failed); the next change is read again.
 */
export async function openCertificateStore(options: CertificateStoreOptions): Promise<CertificateStore> {
  const log = options.log ?? (() => undefined);
  let pair = await loadCertificatePair(options);
  let context = contextOf(pair, options.policy);
  // The digest of the pair last refused, or the message of the last read failure, so
  // that the periodic check logs a problem once, not every interval.
  let refused: string | null = null;
  const listeners: (() => void)[] = [];

  async function checkOnce(): Promise<void> {
    let bytes;
    try {
      bytes = await readPairBytes(options);
    } catch (error) {
      const reason = (error as Error).message;
      if (refused !== reason) log('certificate not reloaded: the current one stays', { reason });
      refused = reason;
      return;
    }
    if (bytes.digest === pair.digest || bytes.digest === refused) return;
    try {
      const next = certificatePairOf(bytes);
      context = contextOf(next, options.policy);
      pair = next;
      refused = null;
    } catch (error) {
      refused = bytes.digest;
      log('certificate not reloaded: the current one stays', { reason: (error as Error).message, serving: pair.leaf.serialNumber });
      return;
    }
    log('certificate reloaded', describePair(pair));
    for (const listener of listeners) listener();
  }

  // One check at a time; a request meanwhile makes one more round once it ends.
  let running: Promise<void> | null = null;
  let again = false;
  function check(): Promise<void> {
    if (running) {
      again = true;
      return running;
    }
    running = (async () => {
      do {
        again = false;
        await checkOnce();
      } while (again);
    })().finally(() => {
      running = null;
    });
    return running;
  }

  let settle: NodeJS.Timeout | undefined;
  const soon = () => {
    clearTimeout(settle);
    settle = setTimeout(() => void check(), SETTLE_MS);
  };
  const watchers: FSWatcher[] = [];
  for (const directory of new Set([dirname(options.certFile), dirname(options.keyFile)])) {
    try {
      // Any entry of the directory: a Kubernetes-style swap renames a symlink, not the files.
      const watcher = watch(directory, { persistent: false }, soon);
      watcher.on('error', (error) => log('certificate directory watch failed; the periodic check goes on', { directory, reason: error.message }));
      watchers.push(watcher);
    } catch (error) {
      log('cannot watch the certificate directory; the periodic check goes on', { directory, reason: (error as Error).message });
    }
  }
  const timer = setInterval(() => void check(), options.checkIntervalMs ?? 5_000);
  timer.unref();
  log('certificate loaded', describePair(pair));

  return {
    // SNI is a DNS name, case-insensitive (RFC 6066 §3); the hash is keyed in lowercase.
    select: (servername) => options.customDomains?.contextFor(servername.toLowerCase()) ?? context,
    defaultContextOptions: () => ({ ...options.policy, cert: pair.cert, key: pair.key }),
    current: () => pair,
    onChange: (listener) => void listeners.push(listener),
    check,
    close() {
      clearInterval(timer);
      clearTimeout(settle);
      for (const watcher of watchers) watcher.close();
    },
  };
}

function contextOf(pair: CertificatePair, policy: SecureContextOptions): SecureContext {
  return createSecureContext({ ...policy, cert: pair.cert, key: pair.key });
}
