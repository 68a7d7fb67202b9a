import { goQuote } from './go-format.js';
import { MultiError, wrap } from './multierror.js';

/**
 * A task's workload identities as `Task.Validate` checks them, after `Task.Canonicalize`
 * moved the default identity out of `Identities` (nomad/structs/structs.go; server-mutate.ts,
 * `canonicalizeIdentities`): the default one, then each named one, a "default" still among
 * them being a duplicate. The job's `Warnings` (an identity without an audience or a TTL,
 * `env` without `change_mode = "restart"`: `WorkloadIdentity.Warnings`) come back with a
 * 200 and are not ported.
 */
type Json = Record<string, any>;

export function identityErrors(t: Json): MultiError {
  const errors = new MultiError();
  if (t.Identity) errors.push(wrap(`Identity ${goQuote(t.Identity.Name)} is invalid: `, validateWorkloadIdentity(t.Identity)));
  for (const identity of (t.Identities ?? []) as Json[]) {
    if (identity.Name === 'default') errors.push('Duplicate default identities found');
    errors.push(wrap(`Identity ${goQuote(identity.Name)} is invalid: `, validateWorkloadIdentity(identity)));
  }
  return errors;
}

/** nomad/structs/workload_id.go, `validIdentityName`: safe in a file name (`secrets/nomad_<name>.jwt`). */
const VALID_IDENTITY_NAME = '^[a-zA-Z0-9-_]{1,128}$';

/** nomad/structs/workload_id.go, `WorkloadIdentity.Validate`. */
export function validateWorkloadIdentity(wi: Json): MultiError | null {
  const errors = new MultiError();
  if (!new RegExp(VALID_IDENTITY_NAME).test(wi.Name)) errors.push(`invalid name ${goQuote(wi.Name)}. Must match regex ${VALID_IDENTITY_NAME}`);
  for (const [i, audience] of ((wi.Audience ?? []) as string[]).entries()) {
    if (audience === '') errors.push(`an empty string is an invalid audience (${i + 1})`);
  }
  switch (wi.ChangeMode) {
    case '':
    case 'noop':
    case 'restart':
      // "" is noop; a signal belongs to change_mode "signal" only.
      if (wi.ChangeSignal !== '') errors.push(`can only use change_signal=${goQuote(wi.ChangeSignal)} with change_mode="signal"`);
      break;
    case 'signal':
      if (wi.ChangeSignal === '') errors.push('change_signal must be specified when using change_mode="signal"');
      break;
    default:
      errors.push(`invalid change_mode: ${wi.ChangeMode}`);
  }
  if (wi.TTL > 0 && (wi.Name === '' || wi.Name === 'default')) errors.push('ttl for default identity not yet supported');
  if (wi.TTL < 0) errors.push('ttl must be >= 0');
  if (wi.Filepath !== '' && !wi.File) errors.push('file parameter must be true in order to specify filepath');
  return errors.orNil();
}
