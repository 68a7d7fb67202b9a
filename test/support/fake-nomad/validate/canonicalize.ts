/**
 * What the Nomad HTTP agent does to a job before the server sees it (command/agent/
 * job_endpoint.go, `jobUpdate` → `apiJobAndRequestToStructs` → `ApiJobToStructJob`): it
 * fills the api package's defaults (api/jobs.go, api/tasks.go, api/services.go,
 * api/resources.go, api/scaling.go, each `Canonicalize`), then converts to the structs the
 * validators read. In the api structs most fields are pointers: a field left out (or null)
 * takes the default, a field sent as 0 or "" keeps it, so `??` below stands for `== nil`.
 *
 * Only the fields test/support/fake-nomad/schema.ts accepts are carried over; the result is
 * a structs.Job as plain JSON, ready for server-mutate.ts.
 */
type Json = Record<string, any>;

const SECOND = 1_000_000_000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;

export interface RequestScope {
  /** `?namespace=`, then the body's `Namespace` (api.WriteRequest). */
  queryNamespace: string;
  bodyNamespace: string;
  /** `?region=`, then the body's `Region`. */
  queryRegion: string;
  bodyRegion: string;
  /** The agent's own region (`region` in its configuration; Nomad's default is "global"). */
  agentRegion: string;
}

/** command/agent/job_endpoint.go, `namespaceForJob`: query, then body, then the job's own, then "default". */
export const namespaceForJob = (job: Json, scope: RequestScope) => scope.queryNamespace || scope.bodyNamespace || job.Namespace || 'default';

/** command/agent/job_endpoint.go, `regionForJob` (single-region jobs): [the region to forward to, the job's Region]. */
export function regionForJob(job: Json, scope: RequestScope): [string, string] {
  let region = scope.queryRegion || scope.bodyRegion || (job.Region ?? '');
  if (region === '' || region === 'global') region = scope.agentRegion;
  return [region, region];
}

/** command/agent/job_endpoint.go, `ApiJobToStructJob`, after api/jobs.go `Job.Canonicalize`. */
export function apiJobToStruct(apiJob: Json, scope: RequestScope): Json {
  const job: Json = {
    ID: apiJob.ID ?? '',
    Name: apiJob.Name ?? apiJob.ID ?? '',
    Namespace: namespaceForJob(apiJob, scope),
    Region: regionForJob(apiJob, scope)[1],
    Priority: apiJob.Priority ?? 50,
    NodePool: apiJob.NodePool ?? '',
    Type: apiJob.Type ?? 'service',
    AllAtOnce: apiJob.AllAtOnce ?? false,
    Datacenters: apiJob.Datacenters ?? null,
    Meta: apiJob.Meta ?? null,
    Constraints: constraints(apiJob.Constraints),
  };
  // api/jobs.go: a service or system job without an update block gets the default one,
  // which its groups then inherit.
  const jobUpdate = apiJob.Update ? updateDefaults(apiJob.Update) : job.Type === 'service' || job.Type === 'system' ? updateDefaults({}) : null;
  // ApiJobToStructJob keeps only Stagger and MaxParallel at the job level.
  job.Update = jobUpdate && jobUpdate.MaxParallel > 0 ? { Stagger: jobUpdate.Stagger, MaxParallel: jobUpdate.MaxParallel } : { Stagger: 0, MaxParallel: 0 };
  job.TaskGroups = (apiJob.TaskGroups ?? []).map((group: Json) => taskGroup(group, job, jobUpdate));
  return job;
}

const constraints = (list: Json[] | null | undefined) => (list ? list.map((c) => ({ LTarget: c.LTarget ?? '', RTarget: c.RTarget ?? '', Operand: c.Operand ?? '' })) : null);

/** api/jobs.go, `DefaultUpdateStrategy` filling what `UpdateStrategy.Canonicalize` finds nil. */
function updateDefaults(update: Json): Json {
  return {
    Stagger: update.Stagger ?? 30 * SECOND,
    MaxParallel: update.MaxParallel ?? 1,
    HealthCheck: update.HealthCheck ?? 'checks',
    MinHealthyTime: update.MinHealthyTime ?? 10 * SECOND,
    HealthyDeadline: update.HealthyDeadline ?? 5 * MINUTE,
    ProgressDeadline: update.ProgressDeadline ?? 10 * MINUTE,
    AutoRevert: update.AutoRevert ?? false,
    Canary: update.Canary ?? 0,
    AutoPromote: update.AutoPromote ?? false,
  };
}

/** api/jobs.go, `UpdateStrategy.Empty`: only user-set, non-zero values count. */
const isEmptyUpdate = (u: Json) => !['Stagger', 'MaxParallel', 'HealthCheck', 'MinHealthyTime', 'HealthyDeadline', 'ProgressDeadline', 'AutoRevert', 'AutoPromote', 'Canary'].some((k) => u[k]);

/** api/tasks.go, `TaskGroup.Canonicalize`, then `ApiTgToStructsTG`. */
function taskGroup(group: Json, job: Json, jobUpdate: Json | null): Json {
  const name = group.Name ?? '';
  const count = group.Count ?? group.Scaling?.Min ?? 1;
  const tg: Json = {
    Name: name,
    Count: count,
    Meta: group.Meta ?? null,
    Constraints: constraints(group.Constraints),
    Networks: networks(group.Networks),
    RestartPolicy: { ...restartDefaults(job.Type), ...defined(group.RestartPolicy) },
    ReschedulePolicy: reschedulePolicy(group.ReschedulePolicy, job.Type),
    // api/tasks.go: a service group gets the default migrate block.
    Migrate: job.Type === 'service' ? { MaxParallel: 1, HealthCheck: 'checks', MinHealthyTime: 10 * SECOND, HealthyDeadline: 5 * MINUTE } : null,
    EphemeralDisk: { Sticky: false, Migrate: false, SizeMB: 300, ...defined(group.EphemeralDisk) },
    ShutdownDelay: group.ShutdownDelay ?? null,
    Update: groupUpdate(group.Update, jobUpdate),
    Scaling: group.Scaling ? scaling(group.Scaling, count) : null,
  };
  tg.Services = services(group.Services, job, tg, null);
  tg.Tasks = (group.Tasks ?? []).map((task: Json) => taskOf(task, job, tg));
  return tg;
}

/** Go's merge of two pointer structs: the fields set (non-nil) in `value` win. */
const defined = (value: Json | null | undefined): Json => Object.fromEntries(Object.entries(value ?? {}).filter(([, v]) => v !== null && v !== undefined));

/** api/tasks.go, `defaultServiceJobRestartPolicy` (service, system) or `defaultBatchJobRestartPolicy`. */
function restartDefaults(type: string): Json {
  return type === 'service' || type === 'system'
    ? { Delay: 15 * SECOND, Attempts: 2, Interval: 30 * MINUTE, Mode: 'fail', RenderTemplates: false }
    : { Delay: 15 * SECOND, Attempts: 3, Interval: 24 * HOUR, Mode: 'fail', RenderTemplates: false };
}

/** api/tasks.go, `NewDefaultReschedulePolicy` and `ReschedulePolicy.Canonicalize`; system and sysbatch groups get none. */
function reschedulePolicy(policy: Json | null | undefined, type: string): Json | null {
  if (!policy && (type === 'system' || type === 'sysbatch')) return null;
  const defaults: Json =
    type === 'service'
      ? { Delay: 30 * SECOND, DelayFunction: 'exponential', MaxDelay: HOUR, Unlimited: true, Attempts: 0, Interval: 0 }
      : type === 'batch'
        ? { Attempts: 1, Interval: 24 * HOUR, Delay: 5 * SECOND, DelayFunction: 'constant', MaxDelay: 0, Unlimited: false }
        : { Attempts: 0, Interval: 0, Delay: 0, DelayFunction: '', MaxDelay: 0, Unlimited: false };
  return { ...defaults, ...defined(policy) };
}

/** api/tasks.go: the group's update block merged over the job's, or the job's when non-empty, then defaults. */
function groupUpdate(update: Json | null | undefined, jobUpdate: Json | null): Json | null {
  if (jobUpdate && update) return updateDefaults({ ...defined(jobUpdate), ...defined(update) });
  if (jobUpdate && !isEmptyUpdate(jobUpdate)) return updateDefaults(jobUpdate);
  return update ? updateDefaults(update) : null;
}

/**
 * api/scaling.go, `ScalingPolicy.Canonicalize`, then command/agent/scaling_endpoint.go,
 * `ApiScalingPolicyToStructs`: a missing Max becomes -1 "to catch in Validate".
 */
function scaling(policy: Json, count: number): Json {
  return { Type: policy.Type || 'horizontal', Enabled: policy.Enabled ?? true, Min: policy.Min ?? count, Max: policy.Max ?? -1, Policy: policy.Policy ?? null, Target: {} };
}

/** command/agent/job_endpoint.go, `ApiNetworkResourceToStructs` (api/resources.go's Canonicalize is a no-op). */
function networks(list: Json[] | null | undefined): Json[] | null {
  if (!list || list.length === 0) return null;
  const port = (p: Json) => ({ Label: p.Label ?? '', Value: p.Value ?? 0, To: p.To ?? 0, HostNetwork: p.HostNetwork ?? '', IgnoreCollision: false });
  return list.map((n) => ({
    Mode: n.Mode ?? '', CIDR: n.CIDR ?? '', IP: n.IP ?? '', Hostname: n.Hostname ?? '', MBits: n.MBits ?? 0,
    DynamicPorts: n.DynamicPorts?.length ? n.DynamicPorts.map(port) : null,
    ReservedPorts: n.ReservedPorts?.length ? n.ReservedPorts.map(port) : null,
  }));
}

/**
 * api/services.go, `Service.Canonicalize` (task is null for a group's services), then
 * command/agent/job_endpoint.go, `ApiServicesToStructs`: a check inherits the service's
 * on_update, and keeps its `TaskName` only in a group service.
 */
function services(list: Json[] | null | undefined, job: Json, tg: Json, task: Json | null): Json[] | null {
  if (!list || list.length === 0) return null;
  return list.map((s) => {
    const onUpdate = s.OnUpdate || 'require_healthy';
    const name = s.Name || (task ? `${job.Name}-${tg.Name}-${task.Name}` : `${job.Name}-${tg.Name}`);
    const checks = (s.Checks ?? []).map((c: Json) => ({
      Name: c.Name ?? '', Type: c.Type ?? '', Command: c.Command ?? '', Args: c.Args ?? null, Path: c.Path ?? '', Protocol: c.Protocol ?? '',
      PortLabel: c.PortLabel ?? '', Expose: c.Expose ?? false, AddressMode: c.AddressMode ?? '', Interval: c.Interval ?? 0, Timeout: c.Timeout ?? 0,
      InitialStatus: c.InitialStatus ?? '', TLSSkipVerify: c.TLSSkipVerify ?? false, Header: c.Header ?? null, Method: c.Method ?? '', Body: c.Body ?? '',
      GRPCService: c.GRPCService ?? '', GRPCUseTLS: c.GRPCUseTLS ?? false, TaskName: task ? '' : (c.TaskName ?? ''),
      SuccessBeforePassing: Math.max(0, c.SuccessBeforePassing ?? 0), FailuresBeforeCritical: Math.max(0, c.FailuresBeforeCritical ?? 0),
      FailuresBeforeWarning: 0, TLSServerName: '', Notes: '', OnUpdate: c.OnUpdate || onUpdate,
    }));
    return {
      Name: name, Tags: s.Tags ?? null, CanaryTags: s.CanaryTags ?? null, EnableTagOverride: s.EnableTagOverride ?? false, PortLabel: s.PortLabel ?? '',
      AddressMode: s.AddressMode || 'auto', Address: s.Address ?? '', Meta: s.Meta ?? null, CanaryMeta: s.CanaryMeta ?? null,
      TaskName: s.TaskName ?? '', OnUpdate: onUpdate, Provider: s.Provider || 'consul', Cluster: 'default', Kind: '', Checks: checks,
    };
  });
}

/** api/tasks.go, `Task.Canonicalize`, then command/agent/job_endpoint.go, `ApiTaskToStructsTask`. */
function taskOf(task: Json, job: Json, tg: Json): Json {
  const t: Json = {
    Name: task.Name ?? '', Driver: task.Driver ?? '', User: task.User ?? '', Leader: task.Leader ?? false,
    Config: task.Config ?? null, Env: task.Env ?? null, Meta: task.Meta ?? null,
    KillTimeout: task.KillTimeout ?? 5 * SECOND, ShutdownDelay: task.ShutdownDelay ?? 0, KillSignal: task.KillSignal ?? '', Kind: task.Kind ?? '',
    Constraints: constraints(task.Constraints),
    Resources: resources(task.Resources ?? {}),
    LogConfig: { MaxFiles: 10, MaxFileSizeMB: 10, Disabled: false, ...defined(task.LogConfig) },
    Templates: task.Templates?.length ? task.Templates.map(template) : null,
    // The api Task's restart block is not in the fake's schema: the task inherits the group's.
    RestartPolicy: tg.RestartPolicy,
    // Nomad 1.5 JSON may set the default identity in `Identity`; a nil entry of `Identities` is skipped.
    Identity: task.Identity ? workloadIdentity(task.Identity) : null,
    Identities: task.Identities?.length ? (task.Identities as (Json | null)[]).filter((id): id is Json => id !== null).map(workloadIdentity) : null,
  };
  t.Services = services(task.Services, job, tg, t);
  return t;
}

/** command/agent/job_endpoint.go, `apiWorkloadIdentityToStructs`: every field as sent (api/tasks.go has no Canonicalize for it). */
function workloadIdentity(id: Json): Json {
  return {
    Name: id.Name ?? '', Audience: id.Audience ?? null, ChangeMode: id.ChangeMode ?? '', ChangeSignal: id.ChangeSignal ?? '', Env: id.Env ?? false,
    File: id.File ?? false, Filepath: id.Filepath ?? '', ServiceName: id.ServiceName ?? '', TTL: id.TTL ?? 0, ExtraClaims: id.ExtraClaims ?? null,
  };
}

/**
 * api/resources.go, `Resources.Canonicalize` (CPU 100 only when neither cpu nor cores is
 * set), then `ApiResourcesToStructs`, which drops DiskMB.
 */
function resources(r: Json): Json {
  const cores = r.Cores ?? 0;
  const cpu = r.CPU ?? (r.Cores === undefined || r.Cores === null ? 100 : 0);
  return { CPU: cpu, Cores: cores, MemoryMB: r.MemoryMB ?? 300, MemoryMaxMB: r.MemoryMaxMB ?? 0, DiskMB: 0, Networks: networks(r.Networks) };
}

/** api/tasks.go, `Template.Canonicalize`: a signal template without a signal gets SIGHUP, any signal is upper-cased. */
function template(tmpl: Json): Json {
  const changeMode = tmpl.ChangeMode ?? 'restart';
  const changeSignal = tmpl.ChangeSignal === undefined || tmpl.ChangeSignal === null ? (changeMode === 'signal' ? 'SIGHUP' : '') : String(tmpl.ChangeSignal).toUpperCase();
  return {
    SourcePath: tmpl.SourcePath ?? '', DestPath: tmpl.DestPath ?? '', EmbeddedTmpl: tmpl.EmbeddedTmpl ?? '', ChangeMode: changeMode, ChangeSignal: changeSignal,
    Splay: tmpl.Splay ?? 5 * SECOND, Perms: tmpl.Perms ?? '0644', Uid: tmpl.Uid ?? null, Gid: tmpl.Gid ?? null, LeftDelim: tmpl.LeftDelim ?? '{{',
    RightDelim: tmpl.RightDelim ?? '}}', Envvars: tmpl.Envvars ?? false, VaultGrace: tmpl.VaultGrace ?? 0, ErrMissingKey: tmpl.ErrMissingKey ?? false,
  };
}
