import { validateConstraint } from './constraint.js';
import { goQuote } from './go-format.js';
import { MultiError } from './multierror.js';
import { validateGroup } from './group.js';

/**
 * nomad/structs/structs.go, `Job.Validate`, and what the `jobValidate` admission hook
 * adds (nomad/job_endpoint_hooks.go, `jobValidate.Validate`): no core jobs, a priority
 * within the server's bounds, and the total count within `job_max_count`. Periodic,
 * parameterized and multi-region jobs are not in the fake's schema.
 */
type Json = Record<string, any>;

/** The server's configuration these checks read (nomad/config.go, `DefaultConfig`). */
export const SERVER_LIMITS = { jobMaxPriority: 100, jobMaxCount: 50_000 };

export function validateJob(job: Json): MultiError | null {
  const errors = new MultiError();
  if (job.Region === '') errors.push('Missing job region');
  if (job.ID === '') errors.push('Missing job ID');
  else if (job.ID.includes(' ')) errors.push('Job ID contains a space');
  else if (job.ID.includes('\0')) errors.push('Job ID contains a null character');
  if (job.Name === '') errors.push('Missing job name');
  else if (job.Name.includes('\0')) errors.push('Job Name contains a null character');
  if (job.Namespace === '') errors.push('Job must be in a namespace');
  if (job.Type === '') errors.push('Missing job type');
  else if (!['_core', 'service', 'batch', 'system', 'sysbatch'].includes(job.Type)) errors.push(`Invalid job type: ${goQuote(job.Type)}`);
  if (job.Datacenters.length === 0) errors.push('Missing job datacenters');
  else for (const datacenter of job.Datacenters) if (datacenter === '') errors.push('Job datacenter must be non-empty string');
  if (job.TaskGroups.length === 0) errors.push('Missing job task groups');
  for (const [i, constraint] of (job.Constraints ?? []).entries()) {
    const invalid = validateConstraint(constraint);
    if (invalid) errors.push(`Constraint ${i + 1} validation failed: ${invalid}`);
  }
  errors.append(groupListErrors(job));
  for (const tg of job.TaskGroups) {
    const invalid = validateGroup(tg, job);
    if (invalid) errors.push(`Task group ${tg.Name} validation failed: ${invalid}`);
  }
  return errors.orNil();
}

/** `Job.Validate`'s loop over the groups: named once each, no negative shutdown delay, system groups at most 1. */
function groupListErrors(job: Json): MultiError {
  const errors = new MultiError();
  const seen = new Map<string, number>();
  for (const [i, tg] of job.TaskGroups.entries()) {
    if (tg.Name === '') errors.push(`Job task group ${i + 1} missing name`);
    else if (seen.has(tg.Name)) errors.push(`Job task group ${i + 1} redefines '${tg.Name}' from group ${seen.get(tg.Name)! + 1}`);
    else seen.set(tg.Name, i);
    if (tg.ShutdownDelay !== null && tg.ShutdownDelay < 0) errors.push('ShutdownDelay must be a positive value');
    if (job.Type === 'system' && tg.Count > 1) errors.push(`Job task group ${tg.Name} has count ${tg.Count}. Count cannot exceed 1 with system scheduler`);
  }
  return errors;
}

/** nomad/job_endpoint_hooks.go, `jobValidate.Validate`: `Job.Validate`'s errors, then its own. */
export function jobValidateHook(job: Json): MultiError | null {
  const errors = new MultiError().append(validateJob(job));
  if (job.Type === '_core') errors.append('job type cannot be core');
  if (job.Priority < 1 || job.Priority > SERVER_LIMITS.jobMaxPriority) errors.append(`job priority must be between [1, ${SERVER_LIMITS.jobMaxPriority}]`);
  const total = job.TaskGroups.reduce((sum: number, tg: Json) => sum + tg.Count, 0);
  if (total > SERVER_LIMITS.jobMaxCount) errors.append(`total count was greater than configured job_max_count: ${total} > ${SERVER_LIMITS.jobMaxCount}`);
  return errors.orNil();
}
