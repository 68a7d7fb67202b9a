import { validateConsulCheck, validateNomadCheck, requiresPort } from './check.js';
import { goQuote } from './go-format.js';
import { MultiError } from './multierror.js';
import { ENV_REFERENCE } from './server-mutate.js';

/** One service, as nomad/structs/services.go `Service.Validate` checks it. */
type Json = Record<string, any>;

/**
 * nomad/structs/services.go, `Service.ValidateName`: an RFC 1123 label (letters, digits
 * and dashes, not starting or ending with a dash, at most 63 characters). Nomad refuses
 * `agent-agt_…` here: `_` is not allowed.
 */
const SERVICE_NAME = /^(?:[a-z0-9]|[a-z0-9][a-z0-9-]{0,61}[a-z0-9])$/i;
export const SERVICE_NAME_ERROR = 'Service name must be valid per RFC 1123 and can contain only alphanumeric characters or dashes and must be no longer than 63 characters';

export function validateServiceName(name: string): string | null {
  return SERVICE_NAME.test(name) ? null : SERVICE_NAME_ERROR;
}

/** nomad/structs/services.go, `Service.Validate` (a service without an identity: the fake's schema has none). */
export function validateService(s: Json): MultiError | null {
  const errors = new MultiError();
  // Interpolations such as ${NOMAD_META_x} are checked as the placeholder "ENV-VAR" (helper/args, `ReplaceEnvWithPlaceHolder`).
  const nameError = validateServiceName(s.Name.replace(ENV_REFERENCE, 'ENV-VAR'));
  if (nameError) errors.push(`${nameError}: ${goQuote(s.Name)}`);
  if (['host', 'driver', 'alloc', 'alloc_ipv6'].includes(s.AddressMode)) {
    if (s.Address !== '') errors.push('Service address_mode must be "auto" if address is set');
  } else if (s.AddressMode !== '' && s.AddressMode !== 'auto') {
    errors.push(`Service address_mode must be "auto", "host", or "driver"; not ${goQuote(s.AddressMode)}`);
  }
  if (!['', 'ignore', 'require_healthy', 'ignore_warnings'].includes(s.OnUpdate)) {
    errors.push(`Service on_update must be "require_healthy", "ignore_warnings", or "ignore"; not ${goQuote(s.OnUpdate)}`);
  }
  if (s.Provider === 'consul') validateChecks(s, errors, (c) => wrapCheck(c, validateConsulCheck(c)));
  else if (s.Provider === 'nomad') validateChecks(s, errors, validateNomadCheck);
  else errors.push(`Service provider must be "consul", or "nomad"; not ${goQuote(s.Provider)}`);
  return errors.orNil();
}

/** `validateConsulService` prefixes a check's error with its name; `validateNomadService` does not. */
const wrapCheck = (c: Json, error: string | null) => (error === null ? null : `Check ${c.Name} invalid: ${error}`);

/**
 * nomad/structs/services.go, `validateConsulService` / `validateNomadService`: each
 * check needs a port (its own or the service's) when its type does (`validateCheckPort`),
 * then passes the provider's rules. The service kind, Connect and identity are not in
 * the fake's schema.
 */
function validateChecks(s: Json, errors: MultiError, validateCheck: (c: Json) => string | null): void {
  for (const c of s.Checks ?? []) {
    if (s.PortLabel === '' && c.PortLabel === '' && requiresPort(c)) {
      errors.push(`Check ${c.Name} invalid: check requires a port but neither check nor service ${goQuote(s.Name, true)} have a port`);
      continue;
    }
    errors.push(validateCheck(c));
  }
}
