import type { IncomingHttpHeaders } from 'node:http';
import { HOP_BY_HOP_HEADERS } from './envoy-parity.js';

export type HeaderMap = Record<string, string | string[] | undefined>;

/**
 * The request headers as Envoy's HTTP connection manager leaves them before ext_authz
 * runs, with `use_remote_address: true` and `xff_num_trusted_hops: 0`: every client is
 * external, so a client's own `x-envoy-*` headers are dropped and
 * `x-envoy-external-address` is the TCP peer; the peer is appended to
 * `x-forwarded-for`; `x-forwarded-proto` is the connection's scheme, https on the TLS
 * port whatever the client sent (conn_manager_utility.cc, `mutateRequestHeaders`, from
 * `connection.ssl()`); an external request gets a fresh `x-request-id`. Hop-by-hop
 * headers never cross a proxy. Pure.
 */
export function sanitiseDownstreamHeaders(headers: IncomingHttpHeaders, peerAddress: string, requestId: string, scheme: 'http' | 'https' = 'http'): HeaderMap {
  const named = new Set(
    String(headers.connection ?? '')
      .split(',')
      .map((token) => token.trim().toLowerCase())
      .filter(Boolean),
  );
  const result: HeaderMap = {};
  for (const [name, value] of Object.entries(headers)) {
    if (HOP_BY_HOP_HEADERS.has(name) || named.has(name) || name.startsWith('x-envoy-')) continue;
    result[name] = value;
  }
  const forwardedFor = headers['x-forwarded-for'];
  result['x-forwarded-for'] = forwardedFor ? `${forwardedFor}, ${peerAddress}` : peerAddress;
  result['x-forwarded-proto'] = scheme;
  result['x-request-id'] = requestId;
  result['x-envoy-external-address'] = peerAddress;
  return result;
}

/** Response headers to send back: everything but hop-by-hop ones (Node frames the body itself). */
export function upstreamResponseHeaders(headers: IncomingHttpHeaders): HeaderMap {
  const result: HeaderMap = {};
  for (const [name, value] of Object.entries(headers)) if (!HOP_BY_HOP_HEADERS.has(name)) result[name] = value;
  return result;
}

/** Envoy reports an IPv4 client on a dual-stack socket as plain IPv4; so does the local edge. */
export function plainAddress(address: string | undefined): string {
  if (!address) return '';
  return /^::ffff:\d+\.\d+\.\d+\.\d+$/i.test(address) ? address.slice(7) : address;
}
