import { validateConstraint } from './constraint.js';
import { goQuote } from './go-format.js';
import { MultiError, wrap } from './multierror.js';
import { validateNetworks } from './network.js';
import { validateMigrateStrategy, validateReschedulePolicy, validateRestartPolicy, validateScalingPolicy, validateUpdateStrategy } from './policies.js';
import { validateGroupScriptChecks, validateGroupServices } from './service-sets.js';
import { validateTask } from './task.js';

/**
 * nomad/structs/structs.go, `TaskGroup.Validate`, for the fields the fake's schema
 * accepts (no affinities, spreads, volumes, disconnect or max_run_duration; every task is
 * a main task, having no lifecycle block).
 */
type Json = Record<string, any>;

export function validateGroup(tg: Json, job: Json): MultiError | null {
  const errors = new MultiError();
  if (tg.Name === '') errors.append('Missing task group name');
  else if (tg.Name.includes('\0')) errors.append('Task group name contains null character');
  if (tg.Count < 0) errors.append("Task group count can't be negative");
  if (tg.Tasks.length === 0) errors.append('Missing tasks for task group');
  for (const [i, constraint] of (tg.Constraints ?? []).entries()) errors.append(wrap(`Constraint ${i + 1} validation failed: `, validateConstraint(constraint)));
  errors.append(tg.RestartPolicy ? validateRestartPolicy(tg.RestartPolicy) : `Task Group ${tg.Name} should have a restart policy`);
  errors.append(reschedulePolicyError(tg, job.Type));
  // nomad/structs/structs.go, `EphemeralDisk.Validate`.
  if (tg.EphemeralDisk.SizeMB < 10) errors.append(`minimum DiskMB value is 10; got ${tg.EphemeralDisk.SizeMB}`);
  if (tg.Update) {
    if (job.Type !== 'service' && job.Type !== 'system') errors.append(`Job type ${goQuote(job.Type)} does not allow update block`);
    errors.append(validateUpdateStrategy(tg.Update));
  }
  if (job.Type === 'service') errors.append(tg.Migrate ? validateMigrateStrategy(tg.Migrate) : null);
  else if (tg.Migrate) errors.append(`Job type ${goQuote(job.Type)} does not allow migrate block`);
  errors.append(taskNameErrors(tg));
  errors.append(wrap('Task group network validation failed: ', validateNetworks(tg)));
  errors.append(wrap('Task group service validation failed: ', validateGroupServices(tg)));
  errors.append(wrap('Task group service check validation failed: ', validateGroupScriptChecks(tg)));
  errors.append(wrap('Task group scaling policy validation failed: ', scalingErrors(tg)));
  for (const task of tg.Tasks) errors.append(wrap(`Task ${task.Name} validation failed: `, validateTask(task, job.Type, tg)));
  return errors.orNil();
}

/** System and sysbatch groups may not have a reschedule policy; the others must. */
function reschedulePolicyError(tg: Json, type: string): MultiError | string | null {
  if (type === 'system' || type === 'sysbatch') return tg.ReschedulePolicy ? 'System or sysbatch jobs should not have a reschedule policy' : null;
  return tg.ReschedulePolicy ? validateReschedulePolicy(tg.ReschedulePolicy) : `Task Group ${tg.Name} should have a reschedule policy`;
}

/** Tasks named, once each, and at most one leader. */
function taskNameErrors(tg: Json): MultiError {
  const errors = new MultiError();
  const seen = new Map<string, number>();
  for (const [i, task] of tg.Tasks.entries()) {
    if (task.Name === '') errors.append(`Task ${i + 1} missing name`);
    else if (seen.has(task.Name)) errors.append(`Task ${i + 1} redefines '${task.Name}' from task ${seen.get(task.Name)! + 1}`);
    else seen.set(task.Name, i);
  }
  if (tg.Tasks.filter((task: Json) => task.Leader).length > 1) errors.append('Only one task may be marked as leader');
  return errors;
}

/**
 * nomad/structs/structs.go, `TaskGroup.validateScalingPolicy`: the policy itself, and a
 * count within its Min and Max, so a job cannot be registered with a count the
 * autoscaler's range excludes.
 */
function scalingErrors(tg: Json): MultiError | null {
  if (!tg.Scaling) return null;
  const errors = new MultiError();
  for (const error of validateScalingPolicy(tg.Scaling)?.errors ?? []) errors.push(`Scaling policy invalid: ${error}`);
  if (tg.Scaling.Max < tg.Count) errors.push('Scaling policy invalid: task group count must not be greater than maximum count in scaling policy');
  if (tg.Count < tg.Scaling.Min) errors.push('Scaling policy invalid: task group count must not be less than minimum count in scaling policy');
  return errors.orNil();
}
