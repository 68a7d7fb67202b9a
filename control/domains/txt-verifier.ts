import { promises as dns } from 'node:dns';
import { verificationRecordName } from '../domain/custom-domain.js';

export type TxtVerdict = { ok: true } | { ok: false; reason: string };

/** Proves control of a hostname: the TXT record at `_agent-platform.<hostname>` holds the value the API showed. */
export interface TxtVerifier {
  verify(hostname: string, expectedValue: string): Promise<TxtVerdict>;
}

export interface TxtVerifierOptions {
  /** DNS_RESOLVER: `host:port` of the one server to ask; null or unset for the system's (/etc/resolv.conf). */
  resolver?: string | null;
  /** Per query try; c-ares doubles it on each retry. */
  timeoutMs?: number;
  tries?: number;
}

/** Answers that mean "no such record", as opposed to a resolver that could not answer. */
const NO_RECORD = new Set(['ENOTFOUND', 'ENODATA']);
/** What a reason quotes of the values found: enough to spot a typo, not a whole zone. */
const VALUES_QUOTED = 3;

/**
 * A TXT verifier on node:dns (c-ares), with a deadline per lookup: the worker's pass must
 * not hang on a silent server. A value split into several strings (RFC 7208 §3.3's
 * long-record convention) is read joined.
 */
export function createTxtVerifier(options: TxtVerifierOptions = {}): TxtVerifier {
  const resolver = new dns.Resolver({ timeout: options.timeoutMs ?? 2000, tries: options.tries ?? 2 });
  if (options.resolver) resolver.setServers([options.resolver]);
  return {
    async verify(hostname, expectedValue) {
      const name = verificationRecordName(hostname);
      let records: string[][];
      try {
        records = await resolver.resolveTxt(name);
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code ?? 'EUNKNOWN';
        if (NO_RECORD.has(code)) return { ok: false, reason: `no TXT record at ${name}` };
        return { ok: false, reason: `the DNS lookup of ${name} failed: ${code}` };
      }
      const values = records.map((chunks) => chunks.join(''));
      if (values.some((value) => value.trim() === expectedValue)) return { ok: true };
      if (values.length === 0) return { ok: false, reason: `no TXT record at ${name}` };
      const found = values.slice(0, VALUES_QUOTED).map((value) => JSON.stringify(value.slice(0, 100))).join(', ');
      return { ok: false, reason: `TXT record at ${name} does not contain the expected value (found ${found})` };
    },
  };
}
