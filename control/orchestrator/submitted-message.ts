import type { JobSpec } from '../domain/job.js';

/**
 * The `submitted` event both drivers record: what was asked, and for a canary the stable
 * version it runs beside (JobSpec.stable), so an operator reading the events sees both.
 */
export function submittedMessage(spec: JobSpec): string {
  const asked = `version ${spec.version}, ${spec.count} replica(s) of ${spec.image}`;
  const stable = spec.stable && spec.stable.version < spec.version ? spec.stable : undefined;
  return stable ? `canary ${asked}, beside stable version ${stable.version} at ${stable.count} replica(s)` : asked;
}
