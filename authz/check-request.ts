/**
 * The parts of Envoy's CheckRequest (envoy.service.auth.v3) authz reads, as proto-loader
 * decodes it (field names as in the .proto). Everything is optional on the wire.
 */
export interface CheckRequest {
  attributes?: {
    source?: PeerAttributes | null;
    destination?: PeerAttributes | null;
    request?: {
      http?: {
        id?: string;
        method?: string;
        host?: string;
        path?: string;
        scheme?: string;
        protocol?: string;
        headers?: Record<string, string>;
      } | null;
    } | null;
  } | null;
}

interface PeerAttributes {
  address?: { socket_address?: { address?: string; port_value?: number } | null } | null;
}

/** What the checker needs from a CheckRequest, already picked out. */
export interface RequestFacts {
  host: string;
  /** The client address the per-caller limit counts against. */
  caller: string;
  /** The `Authorization: Bearer agk_…` token, or null when there is none of that form. */
  accessKey: string | null;
}

const BEARER_ACCESS_KEY = /^bearer\s+(agk_\S+)\s*$/i;

/**
 * `trustExternalAddress`: the caller comes from `x-envoy-external-address` (Envoy behind
 * trusted proxies) rather than the TCP peer; when the header is absent (Envoy sets it only
 * for external clients), the peer is still the best answer.
 */
export function factsOf(request: CheckRequest, trustExternalAddress: boolean): RequestFacts {
  const http = request.attributes?.request?.http;
  const headers = http?.headers ?? {};
  const peer = request.attributes?.source?.address?.socket_address?.address ?? '';
  const external = trustExternalAddress ? headers['x-envoy-external-address']?.trim() : undefined;
  const match = BEARER_ACCESS_KEY.exec(headers.authorization ?? '');
  return {
    host: http?.host ?? '',
    caller: external || peer || 'unknown',
    accessKey: match?.[1] ?? null,
  };
}
