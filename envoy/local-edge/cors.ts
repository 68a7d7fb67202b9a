import type { IncomingHttpHeaders } from 'node:http';

/**
 * envoy.yaml's CorsPolicy for the web console's origin, as the local edge answers it. The
 * origin is a setting (CONSOLE_ORIGIN); the rest is envoy.yaml's, held to it by
 * test/local-edge-parity.test.ts.
 */
export const CORS_POLICY = Object.freeze({
  allowMethods: 'GET, POST',
  allowHeaders: 'authorization, content-type',
  exposeHeaders: 'retry-after, www-authenticate, x-request-id',
  maxAge: '600',
});

export type HeaderSet = Readonly<Record<string, string>>;

export type CorsOutcome = { kind: 'preflight' | 'actual'; headers: HeaderSet };

export interface Cors {
  origin: string;
  /** The whole answer to that origin's preflight. */
  preflight: CorsOutcome;
  /** Set on every other response to a request from the allowed origin, whoever answers it. */
  actual: CorsOutcome;
}

/**
 * The headers for `allowedOrigin`, built once: the edge compares one header per request and
 * allocates nothing for it (issue 21 benchmarks this path). Undefined when no origin is set.
 */
export function corsFor(allowedOrigin: string | undefined): Cors | undefined {
  if (!allowedOrigin) return undefined;
  const responseHeaders = Object.freeze({
    'access-control-allow-origin': allowedOrigin,
    'access-control-expose-headers': CORS_POLICY.exposeHeaders,
  });
  const preflightHeaders = Object.freeze({
    ...responseHeaders,
    'access-control-allow-methods': CORS_POLICY.allowMethods,
    'access-control-allow-headers': CORS_POLICY.allowHeaders,
    'access-control-max-age': CORS_POLICY.maxAge,
    'content-length': '0',
  });
  return {
    origin: allowedOrigin,
    preflight: Object.freeze({ kind: 'preflight', headers: preflightHeaders }),
    actual: Object.freeze({ kind: 'actual', headers: responseHeaders }),
  };
}

/**
 * Envoy's cors filter (source/extensions/filters/http/cors/cors_filter.cc): a request whose
 * Origin is not the allowed one is left alone (`CorsFilter::decodeHeaders` continues,
 * `CorsFilter::encodeHeaders` adds nothing), so it goes to authz as any request does, a
 * preflight included (forward_not_matching_preflights defaults to true). A preflight is
 * OPTIONS with an Origin and a non-empty Access-Control-Request-Method; from the allowed
 * origin it is answered 200 at once with the policy's headers and never reaches authz. Every
 * other response to that origin gets Allow-Origin and Expose-Headers (`encodeHeaders`, which
 * overwrites what a replica sent), denials and the edge's own replies too, since Envoy
 * encodes local replies through the whole filter chain.
 */
export function corsOutcome(cors: Cors | undefined, method: string | undefined, headers: IncomingHttpHeaders): CorsOutcome | undefined {
  if (cors === undefined || headers.origin !== cors.origin) return undefined;
  return method === 'OPTIONS' && headers['access-control-request-method'] ? cors.preflight : cors.actual;
}
