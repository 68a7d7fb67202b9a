import { ACME_CHALLENGE_PREFIX } from './envoy-parity.js';

/** A Host header an https URL can carry: a DNS name or IPv4 address, or a bracketed IPv6 one, and a port. */
const HOST = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)(?::\d{1,5})?$/;

/**
 * EDGE_HTTP_REDIRECT on the plain port: whether a request goes to https at all. ACME
 * HTTP-01 challenges never do, as envoy.yaml's route for them comes before its redirect. Pure.
 */
export function redirectsToHttps(pathAndQuery: string): boolean {
  return !pathAndQuery.startsWith(ACME_CHALLENGE_PREFIX);
}

/**
 * Where a plain-HTTP request is sent: https://<host without its port>[:httpsPort]<path and
 * query>, the port left out when it is 443. envoy.yaml's redirect names :443 instead
 * (its port_redirect), the same URL (RFC 3986 §6.2.3). Null when the Host header is
 * missing or is no host an https URL could carry (answered 400). Pure.
 */
export function httpsRedirectLocation(host: string | undefined, pathAndQuery: string, httpsPort: number): string | null {
  const match = host === undefined ? null : HOST.exec(host);
  if (!match) return null;
  return `https://${match[1]}${httpsPort === 443 ? '' : `:${httpsPort}`}${pathAndQuery}`;
}
