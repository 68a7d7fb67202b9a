/**
 * Custom domains (issue 34): which hostnames an agent may be reached by besides its platform
 * one, how ownership is proven (a TXT record) and the states a domain passes through. Pure
 * rules; the API, the worker and the edge all read hostnames as `normaliseHostname` writes them.
 */
export const DOMAIN_STATUSES = ['pending_verification', 'verifying', 'issuing', 'active', 'failed'] as const;
export type DomainStatus = (typeof DOMAIN_STATUSES)[number];

/** The statuses the worker still has something to do for (verify, order): a domain is due when its next_attempt_at has come. */
export const DOMAIN_WORK_STATUSES: readonly DomainStatus[] = ['pending_verification', 'verifying', 'issuing'];

/** The label under the hostname where the TXT record proving ownership is looked for. */
export const VERIFICATION_LABEL = '_agent-platform';

export const verificationRecordName = (hostname: string) => `${VERIFICATION_LABEL}.${hostname}`;

export interface DomainRow {
  id: string;
  account_id: string;
  agent_id: string;
  hostname: string;
  status: DomainStatus;
  verification_value: string;
  reason: string | null;
  certificate_pem: string | null;
  /** The certificate's private key, sealed with the master keys: never shown, never logged. */
  private_key_sealed: string | null;
  certificate_serial: string | null;
  certificate_not_before: Date | null;
  certificate_not_after: Date | null;
  renew_after: Date | null;
  next_attempt_at: Date | null;
  attempts: number;
  created_at: Date;
  updated_at: Date;
  verified_at: Date | null;
  issued_at: Date | null;
}

/** RFC 1035 §2.3.4: a name is at most 255 octets on the wire, 253 characters written out. */
export const HOSTNAME_MAX_LENGTH = 253;
const LABEL_MAX_LENGTH = 63;
/** RFC 1123 §2.1: letters, digits and hyphens, starting and ending with a letter or digit (a leading digit allowed). */
const LABEL = /^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$/;
const IPV4 = /^\d{1,3}(\.\d{1,3}){3}$/;

/** A hostname as stored, or the rule it breaks, worded for the person who typed it. */
export type CheckedHostname = { hostname: string } | { problem: string; rule: 'format' | 'reserved' };

/**
 * Lower-cases, strips one trailing dot (the root's, as `example.com.` is written in zone
 * files) and checks the rules a certificate's DNS name must follow: RFC 1123 labels, two or
 * more of them, no wildcard, no IP literal. The platform's own agent domain and any name
 * under it are refused: those hostnames are the platform's to route.
 */
export function checkHostname(input: string, agentDomain: string): CheckedHostname {
  const hostname = input.trim().toLowerCase().replace(/\.$/, '');
  const format = (problem: string): CheckedHostname => ({ problem, rule: 'format' });
  if (hostname === '') return format('is empty');
  if (hostname.length > HOSTNAME_MAX_LENGTH) return format(`is longer than ${HOSTNAME_MAX_LENGTH} characters`);
  if (hostname.includes('*')) return format('may not be a wildcard: add each hostname on its own');
  if (IPV4.test(hostname) || hostname.includes(':') || hostname.startsWith('[')) return format('must be a DNS name, not an IP address');
  const labels = hostname.split('.');
  if (labels.length < 2) return format('needs at least two labels, such as app.example.com');
  for (const label of labels) {
    if (label === '') return format('has an empty label (two dots in a row)');
    if (label.length > LABEL_MAX_LENGTH) return format(`has a label longer than ${LABEL_MAX_LENGTH} characters`);
    if (!LABEL.test(label)) return format(`has a label "${label}" that is not letters, digits and inner hyphens (RFC 1123)`);
  }
  // A name whose last label is all digits would be read as an IPv4 address by many parsers (RFC 3696 §2).
  if (/^\d+$/.test(labels.at(-1)!)) return format('must end in a top-level domain, not a number');
  const platform = agentDomain.toLowerCase().replace(/\.$/, '');
  if (hostname === platform || hostname.endsWith(`.${platform}`)) {
    return { problem: `is the platform's agent domain ${platform} or under it; agents already have their hostnames there`, rule: 'reserved' };
  }
  return { hostname };
}
