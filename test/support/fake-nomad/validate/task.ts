import { validateConstraint } from './constraint.js';
import { goDuration as d } from './go-format.js';
import { MultiError } from './multierror.js';
import { validateTaskServices } from './service-sets.js';
import { validateTemplate } from './template.js';
import { identityErrors } from './workload-identity.js';

/**
 * nomad/structs/structs.go, `Task.Validate`, for the fields the fake's schema accepts
 * (no artifacts, vault, actions, lifecycle, volumes or CSI), workload identities
 * included (workload-identity.ts).
 */
type Json = Record<string, any>;

export function validateTask(t: Json, jobType: string, tg: Json): MultiError | null {
  const errors = new MultiError();
  if (t.Name === '') errors.push('Missing task name');
  if (t.Name === 'alloc') errors.push('Task cannot be named "alloc"');
  if (/[/\\]/.test(t.Name)) errors.push('Task name cannot include slashes');
  else if (t.Name.includes('\0')) errors.push('Task name cannot include null characters');
  if (t.Driver === '') errors.push('Missing task driver');
  if (t.KillTimeout < 0) errors.push('KillTimeout must be a positive value');
  else if (jobType === 'service' && tg.Update && tg.Update.ProgressDeadline > 0 && t.KillTimeout > tg.Update.ProgressDeadline) {
    // "KillTimout" is Nomad's spelling.
    errors.push(`KillTimout (${d(t.KillTimeout)}) longer than the group's ProgressDeadline (${d(tg.Update.ProgressDeadline)})`);
  }
  if (t.ShutdownDelay < 0) errors.push('ShutdownDelay must be a positive value');
  errors.push(t.Resources ? validateResources(t.Resources) : 'Missing task resources');
  errors.push(t.LogConfig ? validateLogConfig(t.LogConfig, tg.EphemeralDisk) : 'Missing Log Config');
  for (const [i, constraint] of (t.Constraints ?? []).entries()) {
    const invalid = validateConstraint(constraint);
    if (invalid) errors.push(`Constraint ${i + 1} validation failed: ${invalid}`);
    if (constraint.Operand === 'distinct_hosts' || constraint.Operand === 'distinct_property') {
      errors.push(`Constraint ${i + 1} has disallowed Operand at task level: ${constraint.Operand}`);
    }
  }
  errors.push(validateTaskServices(t, tg.Networks));
  const destinations = new Map<string, number>();
  for (const [i, template] of (t.Templates ?? []).entries()) {
    const invalid = validateTemplate(template);
    if (invalid) errors.push(`Template ${i + 1} validation failed: ${invalid}`);
    if (destinations.has(template.DestPath)) errors.push(`Template ${i + 1} has same destination as ${destinations.get(template.DestPath)}`);
    else destinations.set(template.DestPath, i + 1);
  }
  errors.append(identityErrors(t));
  const secrets = new Set<string>();
  for (const secret of t.Secrets ?? []) {
    if (secrets.has(secret.Name)) errors.push(`Duplicate secret "${secret.Name}" found`);
    else secrets.add(secret.Name);
    if (secret.Provider === 'vault' && !t.Vault) errors.push(`Secret "${secret.Name}" has provider "vault" but no vault block`);
    const invalid = validateSecret(secret);
    if (invalid) errors.push(`Secret "${secret.Name}" is invalid: ${invalid}`);
  }
  return errors.orNil();
}

/** nomad/structs/structs.go, `Secret.Validate` (`validSecretName`: ^[a-zA-Z0-9_]{1,128}$). */
function validateSecret(s: Json): MultiError | null {
  const errors = new MultiError();
  if (!s.Name) errors.push('secret name cannot be empty');
  if (!/^[a-zA-Z0-9_]{1,128}$/.test(s.Name ?? '')) errors.push('secret name must match regex ^[a-zA-Z0-9_]{1,128}$');
  if (!s.Provider) errors.push('secret provider cannot be empty');
  if (!s.Path) errors.push('secret path cannot be empty');
  if (s.Provider === 'nomad' || s.Provider === 'vault') {
    if (Object.keys(s.Env ?? {}).length > 0) errors.push(`${s.Provider} provider cannot use the env block`);
  } else if (Object.keys(s.Config ?? {}).length > 0) {
    errors.push(`custom plugin provider ${s.Provider} cannot use the config block`);
  }
  return errors.orNil();
}

/** nomad/structs/structs.go, `Resources.Validate` with `MeetsMinResources` (CPU 1 MHz, 10 MB). */
function validateResources(r: Json): MultiError | null {
  const errors = new MultiError();
  if (r.Cores > 0 && r.CPU > 0) errors.push("Task can only ask for 'cpu' or 'cores' resource, not both.");
  if (r.Cores < 0) errors.push(`cores value (${r.Cores}) cannot be negative`);
  const minimums = new MultiError();
  if (r.CPU < 1 && r.Cores === 0) minimums.push(`minimum CPU value is 1; got ${r.CPU}`);
  if (r.MemoryMB < 10) minimums.push(`minimum MemoryMB value is 10; got ${r.MemoryMB}`);
  errors.push(minimums.orNil());
  if (r.DiskMB > 0) errors.push("Task can't ask for disk resources, they have to be specified at the task group level.");
  // 0 and -1 (no limit) are sentinels.
  if (r.MemoryMaxMB !== 0 && r.MemoryMaxMB !== -1 && r.MemoryMaxMB < r.MemoryMB) {
    errors.push(`MemoryMaxMB value (${r.MemoryMaxMB}) should be larger than MemoryMB value (${r.MemoryMB})`);
  }
  return errors.orNil();
}

/** nomad/structs/structs.go, `LogConfig.Validate`: the logs must fit in the group's ephemeral disk. */
function validateLogConfig(l: Json, disk: Json | null): MultiError | null {
  const errors = new MultiError();
  if (l.MaxFiles < 1) errors.push(`minimum number of files is 1; got ${l.MaxFiles}`);
  if (l.MaxFileSizeMB < 1) errors.push(`minimum file size is 1MB; got ${l.MaxFileSizeMB}`);
  if (disk) {
    const usage = l.MaxFiles * l.MaxFileSizeMB;
    if (disk.SizeMB <= usage) errors.push(`log storage (${usage} MB) must be less than requested disk capacity (${disk.SizeMB} MB)`);
  }
  return errors.orNil();
}
