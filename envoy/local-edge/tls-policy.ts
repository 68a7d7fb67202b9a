import type { SecureVersion } from 'node:tls';

/**
 * The TLS listener's policy (agent_edge_tls, envoy/tls-listener.yaml, which authz serves Envoy),
 * as the local edge's HTTPS server offers it. test/envoy-tls.test.ts holds these to tls-listener.yaml.
 */

/** tls_params.tls_minimum_protocol_version TLSv1_2; the maximum is TLSv1_3, Node's own. */
export const TLS_MIN_VERSION: SecureVersion = 'TLSv1.2';

/**
 * tls_params.cipher_suites, for TLS 1.2: ECDHE key exchange with AEAD ciphers only (no
 * CBC, no RSA key exchange). OpenSSL and BoringSSL name these suites alike.
 */
export const TLS12_CIPHER_SUITES: readonly string[] = Object.freeze([
  'ECDHE-ECDSA-AES128-GCM-SHA256',
  'ECDHE-RSA-AES128-GCM-SHA256',
  'ECDHE-ECDSA-CHACHA20-POLY1305',
  'ECDHE-RSA-CHACHA20-POLY1305',
  'ECDHE-ECDSA-AES256-GCM-SHA384',
  'ECDHE-RSA-AES256-GCM-SHA384',
]);

/**
 * TLS 1.3's suites, all AEAD: what BoringSSL (Envoy) always offers. Named in Node's
 * `ciphers` string, so OpenSSL's list is stated rather than left to its default.
 */
export const TLS13_CIPHER_SUITES: readonly string[] = Object.freeze(['TLS_AES_128_GCM_SHA256', 'TLS_AES_256_GCM_SHA384', 'TLS_CHACHA20_POLY1305_SHA256']);

/**
 * What the local edge negotiates by ALPN: HTTP/1.1 only, since its forwarding is built on
 * node:http's request and response (framing checks, parser errors, slow-client bounds).
 * Envoy offers h2 first; a client that offers only h2 is refused here with
 * no_application_protocol, one that offers both (browsers, curl) gets HTTP/1.1.
 */
export const LOCAL_EDGE_ALPN_PROTOCOLS: readonly string[] = Object.freeze(['http/1.1']);

/** The TLS options of the local edge's HTTPS server, the certificate aside. */
export const TLS_SERVER_POLICY = Object.freeze({
  minVersion: TLS_MIN_VERSION,
  ciphers: [...TLS13_CIPHER_SUITES, ...TLS12_CIPHER_SUITES].join(':'),
  // The list's order decides (forward secrecy and AEAD first either way), not the client's.
  honorCipherOrder: true,
});
