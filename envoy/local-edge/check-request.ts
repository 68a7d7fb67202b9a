import { AUTHZ_ALLOWED_HEADERS } from './envoy-parity.js';

/** What the local edge knows of one downstream request when it asks authz. */
export interface DownstreamRequest {
  requestId: string;
  method: string;
  /** The Host header as sent, port included. */
  host: string;
  /** Path with query, as sent. */
  path: string;
  /** Request headers after the edge's own sanitising (lowercase names). */
  headers: Record<string, string | string[] | undefined>;
  peer: { address: string; port: number };
  local: { address: string; port: number };
  /** The port's scheme (default http). */
  scheme?: 'http' | 'https';
}

/**
 * The CheckRequest Envoy's ext_authz filter sends for this request: peer and listener
 * addresses, the request line (scheme https on the TLS port) and only envoy.yaml's
 * allowed_headers; no tls_session, as envoy.yaml leaves ext_authz's include_tls_session
 * off. Pure.
 */
export function buildCheckRequest(request: DownstreamRequest) {
  const headers: Record<string, string> = {};
  for (const name of AUTHZ_ALLOWED_HEADERS) {
    const value = request.headers[name];
    if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(',') : value;
  }
  return {
    attributes: {
      source: { address: { socket_address: { address: request.peer.address, port_value: request.peer.port } } },
      destination: { address: { socket_address: { address: request.local.address, port_value: request.local.port } } },
      request: {
        http: {
          id: request.requestId,
          method: request.method,
          host: request.host,
          path: request.path,
          scheme: request.scheme ?? 'http',
          protocol: 'HTTP/1.1',
          headers,
        },
      },
    },
  };
}
