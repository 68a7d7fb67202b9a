import { goQuote } from './go-format.js';

/**
 * The job mutators the Nomad server runs before its validators (nomad/job_endpoint.go,
 * `NewJobEndpoints`; nomad/job_endpoint_hooks.go, `admissionMutators`), for what the
 * fake's schema lets through: `jobCanonicalizer` (nomad/structs/structs.go,
 * `Job.Canonicalize`, `TaskGroup.Canonicalize`, `Task.Canonicalize`; nomad/structs/
 * services.go, `Service.Canonicalize`, `ServiceCheck.Canonicalize`) and the CE
 * `jobNodePoolMutatingHook` (nomad/job_endpoint_hook_node_pool_ce.go). The mutators that
 * only add implicit constraints or identities refuse nothing and are left out.
 */
type Json = Record<string, any>;

const SECOND = 1_000_000_000;

/** Mutates the converted job in place, as Nomad does. */
export function serverMutate(job: Json): Json {
  canonicalizeJob(job);
  // jobCanonicalizer.Mutate: the server's `job_default_priority` (50 unless configured).
  if (job.Priority === 0) job.Priority = 50;
  // jobNodePoolMutatingHook.Mutate (CE): no pool means the built-in "default".
  if (job.NodePool === '') job.NodePool = 'default';
  return job;
}

const emptyToNull = <T>(value: T[] | Json | null | undefined) => (value && Object.keys(value).length > 0 ? value : null);

/** nomad/structs/structs.go, `Job.Canonicalize`. */
function canonicalizeJob(job: Json): void {
  job.Meta = emptyToNull(job.Meta);
  job.Constraints = emptyToNull(job.Constraints);
  if (job.Namespace === '') job.Namespace = 'default';
  if (!job.Datacenters || job.Datacenters.length === 0) job.Datacenters = ['*'];
  for (const tg of job.TaskGroups) canonicalizeGroup(job, tg);
}

/** nomad/structs/structs.go, `TaskGroup.Canonicalize`. */
function canonicalizeGroup(job: Json, tg: Json): void {
  tg.Meta = emptyToNull(tg.Meta);
  tg.Constraints = emptyToNull(tg.Constraints);
  // `NewReschedulePolicy`: only service and batch jobs have a default.
  if (!tg.ReschedulePolicy && job.Type === 'service') tg.ReschedulePolicy = { Delay: 30 * SECOND, DelayFunction: 'exponential', MaxDelay: 3600 * SECOND, Unlimited: true, Attempts: 0, Interval: 0 };
  if (!tg.ReschedulePolicy && job.Type === 'batch') tg.ReschedulePolicy = { Attempts: 1, Interval: 86400 * SECOND, Delay: 5 * SECOND, DelayFunction: 'constant', MaxDelay: 0, Unlimited: false };
  if (job.Type === 'service' && !tg.Migrate) tg.Migrate = { MaxParallel: 1, HealthCheck: 'checks', MinHealthyTime: 10 * SECOND, HealthyDeadline: 300 * SECOND };
  // nomad/structs/structs.go, `ScalingPolicy.Canonicalize`: the target is always this group.
  if (tg.Scaling) tg.Scaling = { ...tg.Scaling, Type: tg.Scaling.Type || 'horizontal', Target: { Namespace: job.Namespace, Job: job.ID, Group: tg.Name } };
  for (const service of tg.Services ?? []) canonicalizeService(service, job.Name, tg.Name, 'group');
  // nomad/structs/structs.go, `NetworkResource.Canonicalize`.
  for (const network of tg.Networks ?? []) for (const port of [...(network.DynamicPorts ?? []), ...(network.ReservedPorts ?? [])]) port.HostNetwork ||= 'default';
  for (const task of tg.Tasks) canonicalizeTask(job, tg, task);
}

/** nomad/structs/structs.go, `Task.Canonicalize` (and `Template.Canonicalize`: signals upper-cased). */
function canonicalizeTask(job: Json, tg: Json, task: Json): void {
  task.Meta = emptyToNull(task.Meta);
  task.Config = emptyToNull(task.Config);
  task.Env = emptyToNull(task.Env);
  task.Constraints = emptyToNull(task.Constraints);
  for (const service of task.Services ?? []) canonicalizeService(service, job.Name, tg.Name, task.Name);
  task.Resources ??= { CPU: 100, Cores: 0, MemoryMB: 300, MemoryMaxMB: 0, DiskMB: 0, Networks: null };
  task.RestartPolicy ??= tg.RestartPolicy;
  if (task.KillTimeout === 0) task.KillTimeout = 5 * SECOND;
  for (const template of task.Templates ?? []) template.ChangeSignal = template.ChangeSignal.toUpperCase();
  canonicalizeIdentities(task);
}

/**
 * `Task.Canonicalize`'s identities: each canonicalized, the last one named "default" moved
 * to `Identity` (so a second one stays behind, which `Task.Validate` then refuses), and a
 * default identity made when there is none (nomad/structs/structs.go).
 */
function canonicalizeIdentities(task: Json): void {
  let defaultIndex = -1;
  for (const [i, identity] of ((task.Identities ?? []) as Json[]).entries()) {
    canonicalizeIdentity(identity);
    if (identity.Name === DEFAULT_IDENTITY) {
      task.Identity = identity;
      defaultIndex = i;
    }
  }
  if (defaultIndex >= 0) task.Identities.splice(defaultIndex, 1);
  if (task.Identity) canonicalizeIdentity(task.Identity);
  else task.Identity = defaultIdentity();
}

/** nomad/structs/workload_id.go, `WorkloadIdentityDefaultName` and `DefaultWorkloadIdentity` (audience `IdentityDefaultAud`, nomad/structs/identity.go). */
const DEFAULT_IDENTITY = 'default';
const defaultIdentity = (): Json => ({
  Name: DEFAULT_IDENTITY, Audience: ['nomadproject.io'], ChangeMode: '', ChangeSignal: '', Env: false, File: false, Filepath: '', ServiceName: '', TTL: 0, ExtraClaims: null,
});

/** nomad/structs/workload_id.go, `WorkloadIdentity.Canonicalize`: no name is the default identity, which is only ever for Nomad itself. */
function canonicalizeIdentity(identity: Json): void {
  if (identity.Name === '') identity.Name = DEFAULT_IDENTITY;
  if (identity.Name === DEFAULT_IDENTITY) identity.Audience = ['nomadproject.io'];
  if (identity.ChangeSignal !== '') identity.ChangeSignal = identity.ChangeSignal.toUpperCase();
}

/** helper/args/args.go, `envRe`: `${NAME}` with letters, digits, `_`, `-` and `.`. */
export const ENV_REFERENCE = /\$\{[a-zA-Z0-9_\-.]+\}/g;

/**
 * nomad/structs/services.go, `Service.Canonicalize`: `${JOB}`, `${TASKGROUP}`, `${TASK}`
 * and `${BASE}` in the name are replaced (helper/args, `ReplaceEnv`), checks get their
 * default name, task and on_update.
 */
function canonicalizeService(service: Json, job: string, group: string, task: string): void {
  service.Tags = emptyToNull(service.Tags);
  service.CanaryTags = emptyToNull(service.CanaryTags);
  service.Checks = emptyToNull(service.Checks);
  if (service.TaskName === '' && task !== 'group') service.TaskName = task;
  const env: Record<string, string> = { JOB: job, TASKGROUP: group, TASK: task, BASE: `${job}-${group}-${task}` };
  service.Name = service.Name.replace(ENV_REFERENCE, (reference: string) => env[reference.slice(2, -1)] ?? reference);
  for (const check of service.Checks ?? []) {
    if (check.Name === '') check.Name = `service: ${goQuote(service.Name)} check`;
    if (check.TaskName === '' && service.TaskName !== 'group') check.TaskName = service.TaskName;
    if (check.OnUpdate === '') check.OnUpdate = 'require_healthy';
  }
  if (service.Provider === '') service.Provider = 'consul';
}
