import { goDuration as d, goQuote } from './go-format.js';

/**
 * A service's health check, as nomad/structs/services.go checks it: `validateCommon`
 * for both providers, then `validateConsul` or `validateNomad`. The first problem found
 * is the check's error, as in Nomad.
 */
type Json = Record<string, any>;

const SECOND = 1_000_000_000;
const MIN_INTERVAL = SECOND;
const MIN_TIMEOUT = SECOND;

/** nomad/structs/services.go, `ServiceCheck.validateCommon`. */
function validateCommon(c: Json, allowable: string[]): string | null {
  const type = c.Type.toLowerCase();
  if (!allowable.includes(type)) return `invalid check type (${goQuote(type)}), must be one of ${allowable.join(', ')}`;
  if (type === 'http') {
    if (c.Path === '') return 'http type must have http path';
    const url = parsedUrl(c.Path);
    if (url === null) return 'http type must have valid http path';
    if (url.scheme !== '') return 'http type must have relative http path';
  }
  if (type === 'script' && c.Command === '') return 'script type must have a valid script path';
  if (c.Interval === 0) return `missing required value interval. Interval cannot be less than ${d(MIN_INTERVAL)}`;
  if (c.Interval < MIN_INTERVAL) return `interval (${d(c.Interval)}) cannot be lower than ${d(MIN_INTERVAL)}`;
  // Nomad names the interval minimum in the timeout messages; both are 1s.
  if (c.Timeout === 0) return `missing required value timeout. Timeout cannot be less than ${d(MIN_INTERVAL)}`;
  if (c.Timeout < MIN_TIMEOUT) return `timeout (${d(c.Timeout)}) is lower than required minimum timeout ${d(MIN_INTERVAL)}`;
  if (!['', 'passing', 'warning', 'critical'].includes(c.InitialStatus)) {
    return `invalid initial check state (${c.InitialStatus}), must be one of "passing", "warning", "critical" or empty`;
  }
  if (c.AddressMode === 'auto') return `invalid address_mode ${goQuote(c.AddressMode)} - auto only valid for services`;
  if (!['', 'host', 'driver', 'alloc', 'alloc_ipv6'].includes(c.AddressMode)) return `invalid address_mode ${goQuote(c.AddressMode)}`;
  if (!['', 'ignore', 'require_healthy', 'ignore_warnings'].includes(c.OnUpdate)) {
    return `on_update must be "require_healthy", "ignore_warnings", or "ignore"; got ${goQuote(c.OnUpdate)}`;
  }
  // check_restart is not in the fake's schema: its checks are skipped.
  return null;
}

/** nomad/structs/services.go, `ServiceCheck.validateConsul`. */
export function validateConsulCheck(c: Json): string | null {
  const common = validateCommon(c, ['grpc', 'tcp', 'http', 'script']);
  if (common) return common;
  const type = c.Type.toLowerCase();
  if (c.Expose && type !== 'grpc' && type !== 'http') return 'expose may only be set on HTTP or gRPC checks';
  const passFail = ['tcp', 'http', 'grpc'];
  for (const [field, name] of [['SuccessBeforePassing', 'success_before_passing'], ['FailuresBeforeCritical', 'failures_before_critical'], ['FailuresBeforeWarning', 'failures_before_warning']] as const) {
    if (c[field] < 0) return `${name} must be non-negative`;
    if (c[field] > 0 && !passFail.includes(c.Type)) return `${name} not supported for check of type ${goQuote(c.Type)}`;
  }
  if (c.Notes.length > 255) return 'notes must not be longer than 255 characters';
  return null;
}

/** helper/funcs.go, `IsMethodHTTP`: one of net/http's method names, in any case. */
const HTTP_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'CONNECT', 'OPTIONS', 'TRACE'];

/** nomad/structs/services.go, `ServiceCheck.validateNomad`. */
export function validateNomadCheck(c: Json): string | null {
  const common = validateCommon(c, ['tcp', 'http']);
  if (common) return common;
  if (c.Expose) return 'expose may only be set for Consul service checks';
  if (c.OnUpdate === 'ignore_warnings') return 'on_update may only be set to ignore_warnings for Consul service checks';
  if (c.AddressMode === 'driver') return 'address_mode = driver may only be set for Consul service checks';
  if (c.Type === 'http' && c.Method !== '' && !HTTP_METHODS.includes(c.Method.toUpperCase())) return `method type ${goQuote(c.Method)} not supported in Nomad http check`;
  if (c.SuccessBeforePassing !== 0) return 'success_before_passing may only be set for Consul service checks';
  if (c.FailuresBeforeCritical !== 0) return 'failures_before_critical may only be set for Consul service checks';
  if (c.FailuresBeforeWarning !== 0) return 'failures_before_warning may only be set for Consul service checks';
  if (c.TLSServerName !== '') return 'tls_server_name may only be set for Consul service checks';
  return null;
}

/** nomad/structs/services.go, `ServiceCheck.RequiresPort` (on the type as written, not lower-cased). */
export const requiresPort = (c: Json) => c.Type === 'grpc' || c.Type === 'http' || c.Type === 'tcp';

/**
 * Go's net/url/url.go, `Parse`, for what decides a check path: control characters,
 * `getScheme`, a colon in a first path segment without a scheme, an authority's port,
 * and `%` escapes (`unescape`). Null when Go's parser would refuse it.
 */
function parsedUrl(raw: string): { scheme: string } | null {
  const [withoutFragment, ...fragment] = raw.split('#');
  if (/[\x00-\x1f\x7f]/.test(raw)) return null;
  if (fragment.length > 0 && !validEscapes(fragment.join('#'))) return null;
  let rest = withoutFragment!;
  const scheme = /^[A-Za-z][A-Za-z0-9+.-]*:/.exec(rest)?.[0].slice(0, -1) ?? '';
  if (rest.startsWith(':')) return null; // "missing protocol scheme"
  rest = rest.slice(scheme === '' ? 0 : scheme.length + 1).split('?')[0]!;
  if (scheme === '' && /^[^/]*:/.test(rest)) return null; // "first path segment in URL cannot contain colon"
  if (rest.startsWith('//') && (scheme !== '' || !rest.startsWith('///'))) {
    const authority = rest.slice(2).split('/')[0]!;
    rest = rest.slice(2 + authority.length);
    const port = /:([^\]:]*)$/.exec(authority.replace(/^.*@/, ''))?.[1];
    if (port !== undefined && !/^[0-9]*$/.test(port)) return null; // "invalid port"
  }
  return validEscapes(rest) ? { scheme } : null;
}

/** Go's net/url, `unescape`: every `%` starts two hex digits. */
const validEscapes = (text: string) => !/%(?![0-9A-Fa-f]{2})/.test(text);
