import { isIPv4 } from 'node:net';
import { refusedAddress, type AddressPolicy } from './public-address.js';

/**
 * Host names that never lead to the public internet: localhost (RFC 6761 §6.3), mDNS's
 * .local (RFC 6762), .home.arpa (RFC 8375) and .internal (reserved by ICANN for private
 * use). Refused at save unless private networks are allowed; the address check at each
 * delivery would refuse what they resolve to anyway, this says so at once.
 */
const PRIVATE_NAME_SUFFIXES = ['localhost', 'local', 'home.arpa', 'internal'];

/** The metadata services' own names, refused whatever the policy (their addresses are too). */
const METADATA_NAMES = new Set(['metadata.google.internal', 'metadata.goog']);

/**
 * What is wrong with `text` as a webhook's URL under `policy`, or null with the URL to
 * store. It must be an absolute http or https URL without user or password (a secret in
 * a URL shows on every listing and in every log), written as a WHATWG URL parser writes
 * it: a text the parser would rewrite to accept (`http:///x` read as `http://x/`, tabs
 * and line breaks dropped, backslashes read as slashes, spaces trimmed, a host in
 * decimal or upper case) is refused, not rewritten, so that what is stored and checked
 * is what the caller wrote. The one rewrite let through is the slash a bare origin
 * gets (`https://example.com` is stored as `https://example.com/`). A host given as an
 * IP address is checked here as it is at each delivery (public-address.ts); a host name
 * is checked at each delivery, on what it resolves to then.
 */
export function checkWebhookUrl(text: string, policy: AddressPolicy): { problem: string } | { url: string } {
  if (!URL.canParse(text)) return { problem: 'is not an absolute URL' };
  const url = new URL(text);
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return { problem: 'must be an http or https URL' };
  if (url.username !== '' || url.password !== '') return { problem: 'must not hold a user name or password' };
  if (url.hostname === '') return { problem: 'must name a host' };
  const hostProblem = problemOfHost(url.hostname, policy);
  if (hostProblem) return { problem: hostProblem };
  if (text !== url.href && `${text}/` !== url.href) {
    return { problem: `must be written as a URL parser reads it, which is ${JSON.stringify(url.href)}; send that if it is what you meant` };
  }
  return { url: url.href };
}

function problemOfHost(hostname: string, policy: AddressPolicy): string | null {
  // The parser writes every IPv4 form (decimal, hex, octal, short) as a dotted quad and IPv6 in brackets.
  const address = hostname.startsWith('[') ? hostname.slice(1, -1) : isIPv4(hostname) ? hostname : undefined;
  if (address !== undefined) {
    const refused = refusedAddress(address, policy);
    return refused && `names ${address}, ${refused}`;
  }
  const name = hostname.replace(/\.$/, '');
  if (METADATA_NAMES.has(name)) return `names ${name}, a cloud metadata service, which webhooks never reach`;
  if (!policy.allowPrivateNetworks && PRIVATE_NAME_SUFFIXES.some((suffix) => name === suffix || name.endsWith(`.${suffix}`))) {
    return `names ${name}, a name private networks use (WEBHOOK_ALLOW_PRIVATE_NETWORKS is off)`;
  }
  return null;
}
