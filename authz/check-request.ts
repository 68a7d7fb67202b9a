import { ACME_CHALLENGE_PATH } from '../contract/edge-keys.js';

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
        /**
         * Envoy fills this map unless ext_authz's `encode_raw_headers` is set, which sends
         * `header_map` instead (envoy source/extensions/filters/common/ext_authz/
         * check_request_utils.cc, `CheckRequestUtils::setHttpRequest`); envoy.yaml leaves it
         * unset, and Envoy joins a repeated header's values with "," here.
         */
        headers?: Record<string, string>;
      } | null;
    } | null;
  } | null;
}

interface PeerAttributes {
  address?: { socket_address?: { address?: string; port_value?: number } | null } | null;
}

/** The strings of a CheckRequest a decision reads, as on the wire. */
export interface CheckRequestFields {
  /** `attributes.request.http.host`, '' when absent. */
  host: string;
  /** `attributes.source.address.socket_address.address`, '' when absent. */
  peer: string;
  /** The `authorization` entry of `attributes.request.http.headers`. */
  authorization: string | undefined;
  /** The `x-envoy-external-address` entry of the same map. */
  externalAddress: string | undefined;
  /** The `traceparent` entry: the caller's W3C trace context, which the edge continues (contract/edge-trace.ts). */
  traceparent: string | undefined;
  /** The `x-request-id` entry: Envoy's id of the request, a new trace's id when the caller sent none. */
  requestId: string | undefined;
  /**
   * `attributes.request.http.path` (with its query), present only when it is an ACME HTTP-01
   * challenge's (under ACME_CHALLENGE_PATH): no other decision reads the path, so no other
   * path is turned into a string.
   */
  challengePath?: string;
}

/** What the checker needs from a CheckRequest, already picked out. */
export interface RequestFacts {
  host: string;
  /** The client address the per-caller limit counts against. */
  caller: string;
  /** The `Authorization: Bearer agk_…` token, or null when there is none of that form. */
  accessKey: string | null;
  /** The path, only for an ACME HTTP-01 challenge (CheckRequestFields.challengePath). */
  challengePath?: string;
  /** CheckRequestFields.traceparent and requestId, for the edge's trace context of an allowed request. */
  traceparent: string | undefined;
  requestId: string | undefined;
}

const BEARER_ACCESS_KEY = /^bearer\s+(agk_\S+)\s*$/i;

/** The fields of a CheckRequest as proto-loader decodes it (the fast decoder's fallback and reference). */
export function fieldsOf(request: CheckRequest): CheckRequestFields {
  const http = request.attributes?.request?.http;
  const headers = http?.headers ?? {};
  const fields: CheckRequestFields = {
    host: http?.host ?? '',
    peer: request.attributes?.source?.address?.socket_address?.address ?? '',
    authorization: headers.authorization,
    externalAddress: headers['x-envoy-external-address'],
    traceparent: headers.traceparent,
    requestId: headers['x-request-id'],
  };
  if (http?.path?.startsWith(ACME_CHALLENGE_PATH)) fields.challengePath = http.path;
  return fields;
}

/**
 * `trustExternalAddress`: the caller comes from `x-envoy-external-address` (Envoy behind
 * trusted proxies) rather than the TCP peer; when the header is absent (Envoy sets it only
 * for external clients), the peer is still the best answer.
 */
export function factsOf(fields: CheckRequestFields, trustExternalAddress: boolean): RequestFacts {
  const external = trustExternalAddress ? fields.externalAddress?.trim() : undefined;
  const match = BEARER_ACCESS_KEY.exec(fields.authorization ?? '');
  const facts: RequestFacts = {
    host: fields.host,
    caller: external || fields.peer || 'unknown',
    accessKey: match?.[1] ?? null,
    traceparent: fields.traceparent,
    requestId: fields.requestId,
  };
  if (fields.challengePath !== undefined) facts.challengePath = fields.challengePath;
  return facts;
}
