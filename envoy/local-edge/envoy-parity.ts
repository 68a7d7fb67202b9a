import { ACME_CHALLENGE_PATH } from '../../contract/edge-keys.js';
/**
 * The envoy.yaml settings the local edge copies, so it behaves as the production edge
 * does. test/local-edge-parity.test.ts reads envoy.yaml and fails when they drift apart.
 */

/**
 * Cluster `authz`'s pipe address: where Envoy reaches authz, its sidecar, on a host
 * without Nomad (the Nomad job's template puts the socket in the allocation's directory).
 */
export const AUTHZ_SOCKET_PATH = '/run/agent-platform/authz.sock';

/** ext_authz `grpc_service.timeout` (35s): above authz's longest Check, a parked agent's wake (WAKE_TIMEOUT_SECONDS, 30 s at most). */
export const EXT_AUTHZ_TIMEOUT_MS = 35_000;

/** ext_authz `allowed_headers`: the only request headers authz is shown. */
export const AUTHZ_ALLOWED_HEADERS: readonly string[] = Object.freeze(['authorization', 'x-envoy-external-address', 'traceparent', 'x-request-id']);

/** `local_reply_config` bodies for Envoy's own failures, by the status they map to. */
export const EDGE_REPLIES = Object.freeze({
  /** UF/URX/UC/UR: the replica refused, reset or crashed. */
  badGateway: 'bad gateway: the agent is not reachable\n',
  /** UH: authz allowed without naming a replica. */
  noHost: 'service unavailable: the agent has no running replica\n',
  /**
   * status_on_error: authz unreachable, erroring or past its deadline. envoy.yaml's
   * local-reply mapper for it sends this same 503 and body (test/envoy-config.test.ts).
   */
  authzUnavailable: 'service unavailable: the edge cannot check requests right now\n',
});

/**
 * Hop-by-hop headers Envoy's HTTP/1 codec never forwards (RFC 9110 §7.6.1 plus the
 * legacy ones); the upgrade family goes too, as envoy.yaml has no upgrade_configs.
 */
export const HOP_BY_HOP_HEADERS: ReadonlySet<string> = new Set([
  'connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'te', 'trailer', 'upgrade',
]);

/**
 * The route that keeps ACME HTTP-01 challenges (RFC 8555 §8.3) on plain HTTP: envoy.yaml
 * matches this prefix before its redirect route, and the local edge's redirect skips it.
 */
export const ACME_CHALLENGE_PREFIX = ACME_CHALLENGE_PATH;

/**
 * The runtime key that turns envoy.yaml's redirect route on (100) or off (0, its default):
 * EDGE_HTTP_REDIRECT for Envoy (envoy/README.md, "HTTPS").
 */
export const HTTP_REDIRECT_RUNTIME_KEY = 'edge.http_redirect';
