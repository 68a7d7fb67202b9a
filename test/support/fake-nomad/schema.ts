/**
 * The job JSON that Nomad's HTTP API accepts, as its api structs spell it (hashicorp/nomad
 * api/jobs.go, tasks.go, resources.go, services.go, scaling.go), for the parts agents use.
 *
 * Real Nomad decodes job JSON case-insensitively and silently drops unknown fields; only a
 * task's driver `Config` is checked, on the client, later. This fake is deliberately
 * stricter: an unknown or mistyped field anywhere is a 400 naming its path, so a typo in
 * the driver's job fails a test instead of being ignored by a real cluster.
 */
type FieldType = 'string' | 'int' | 'number' | 'bool' | 'duration' | 'strings' | 'stringMap' | 'any' | Struct | [Struct];
interface Struct { [field: string]: FieldType }

const Port: Struct = { Label: 'string', Value: 'int', To: 'int', HostNetwork: 'string' };
const NetworkResource: Struct = { Mode: 'string', Device: 'string', CIDR: 'string', IP: 'string', MBits: 'int', DynamicPorts: [Port], ReservedPorts: [Port], Hostname: 'string' };
const ServiceCheck: Struct = {
  Name: 'string', Type: 'string', Command: 'string', Args: 'strings', Path: 'string', Protocol: 'string', PortLabel: 'string',
  Expose: 'bool', AddressMode: 'string', Interval: 'duration', Timeout: 'duration', InitialStatus: 'string', TLSSkipVerify: 'bool',
  Method: 'string', Header: 'any', GRPCService: 'string', GRPCUseTLS: 'bool', TaskName: 'string', SuccessBeforePassing: 'int',
  FailuresBeforeCritical: 'int', OnUpdate: 'string', Body: 'string',
};
const Service: Struct = {
  Name: 'string', Tags: 'strings', CanaryTags: 'strings', EnableTagOverride: 'bool', PortLabel: 'string', AddressMode: 'string',
  Address: 'string', Checks: [ServiceCheck], Meta: 'stringMap', CanaryMeta: 'stringMap', TaskName: 'string', OnUpdate: 'string', Provider: 'string',
};
const Resources: Struct = { CPU: 'int', Cores: 'int', MemoryMB: 'int', MemoryMaxMB: 'int', DiskMB: 'int', Networks: [NetworkResource] };
const Template: Struct = {
  SourcePath: 'string', DestPath: 'string', EmbeddedTmpl: 'string', ChangeMode: 'string', ChangeSignal: 'string', Splay: 'duration',
  Perms: 'string', Uid: 'int', Gid: 'int', LeftDelim: 'string', RightDelim: 'string', Envvars: 'bool', VaultGrace: 'duration', ErrMissingKey: 'bool',
};
const LogConfig: Struct = { MaxFiles: 'int', MaxFileSizeMB: 'int', Disabled: 'bool' };
/** api/tasks.go `Secret` (Nomad 1.11+). */
const Secret: Struct = { Name: 'string', Provider: 'string', Path: 'string', Config: 'any', Env: 'stringMap' };
/** api/tasks.go `WorkloadIdentity`: an `identity` block. */
const WorkloadIdentity: Struct = {
  Name: 'string', Audience: 'strings', ChangeMode: 'string', ChangeSignal: 'string', Env: 'bool', File: 'bool', Filepath: 'string',
  ServiceName: 'string', TTL: 'duration', ExtraClaims: 'strings',
};
const Task: Struct = {
  Name: 'string', Driver: 'string', User: 'string', Config: 'any', Env: 'stringMap', Services: [Service], Resources, Meta: 'stringMap',
  KillTimeout: 'duration', LogConfig, Templates: [Template], Leader: 'bool', ShutdownDelay: 'duration', KillSignal: 'string', Kind: 'string',
  Secrets: [Secret], Identity: WorkloadIdentity, Identities: [WorkloadIdentity],
};
const RestartPolicy: Struct = { Interval: 'duration', Attempts: 'int', Delay: 'duration', Mode: 'string', RenderTemplates: 'bool' };
const ReschedulePolicy: Struct = { Attempts: 'int', Interval: 'duration', Delay: 'duration', DelayFunction: 'string', MaxDelay: 'duration', Unlimited: 'bool' };
const UpdateStrategy: Struct = {
  Stagger: 'duration', MaxParallel: 'int', HealthCheck: 'string', MinHealthyTime: 'duration', HealthyDeadline: 'duration',
  ProgressDeadline: 'duration', Canary: 'int', AutoRevert: 'bool', AutoPromote: 'bool',
};
const ScalingPolicy: Struct = { ID: 'string', Namespace: 'string', Type: 'string', Target: 'stringMap', Min: 'int', Max: 'int', Policy: 'any', Enabled: 'bool' };
const Constraint: Struct = { LTarget: 'string', RTarget: 'string', Operand: 'string' };
const TaskGroup: Struct = {
  Name: 'string', Count: 'int', Constraints: [Constraint], Tasks: [Task], Services: [Service], Networks: [NetworkResource],
  RestartPolicy, ReschedulePolicy, Update: UpdateStrategy, Scaling: ScalingPolicy, Meta: 'stringMap', ShutdownDelay: 'duration',
  StopAfterClientDisconnect: 'duration', EphemeralDisk: { Sticky: 'bool', Migrate: 'bool', SizeMB: 'int' },
};
const Job: Struct = {
  ID: 'string', Name: 'string', Type: 'string', Namespace: 'string', Region: 'string', Priority: 'int', AllAtOnce: 'bool',
  Datacenters: 'strings', NodePool: 'string', Constraints: [Constraint], TaskGroups: [TaskGroup], Update: UpdateStrategy, Meta: 'stringMap',
  // api.Job's "fields set by server": in a job read from GET /v1/job/:id and registered again.
  Stop: 'bool', ParentID: 'string', Dispatched: 'bool', Status: 'string', StatusDescription: 'string', Stable: 'bool', Version: 'int',
  SubmitTime: 'int', CreateIndex: 'int', ModifyIndex: 'int', JobModifyIndex: 'int',
};
/** PUT /v1/jobs: api.JobRegisterRequest. */
export const JobRegisterRequest: Struct = {
  Job, EnforceIndex: 'bool', JobModifyIndex: 'int', PolicyOverride: 'bool', PreserveCounts: 'bool', EvalPriority: 'int',
  Region: 'string', Namespace: 'string', SecretID: 'string',
};
export const ScalingRequest: Struct = { Count: 'int', Target: 'stringMap', Message: 'string', Error: 'bool', Meta: 'any', PolicyOverride: 'bool', JobModifyIndex: 'int', EnforceIndex: 'bool', Region: 'string', Namespace: 'string' };
export const VariableRequest: Struct = { Namespace: 'string', Path: 'string', Items: 'stringMap', CreateIndex: 'int', ModifyIndex: 'int', CreateTime: 'int', ModifyTime: 'int', Lock: 'any' };

/** The docker driver's options (its config spec) that agents may use: the client's "Failed Validation" otherwise. */
export const DockerConfig: Struct = {
  image: 'string', ports: 'strings', cap_drop: 'strings', cap_add: 'strings', security_opt: 'strings', pids_limit: 'int',
  cpu_hard_limit: 'bool', labels: 'stringMap', readonly_rootfs: 'bool', command: 'string', args: 'strings', force_pull: 'bool',
  image_pull_timeout: 'string', init: 'bool', network_mode: 'string', memory_hard_limit: 'int',
  // drivers/docker/config.go `taskConfigSpec`: a block, so a list of one object in JSON.
  auth: [{ username: 'string', password: 'string', email: 'string', server_address: 'string' }], auth_soft_fail: 'bool',
};

/** Every problem in `value` against `shape`, as `path: what`. */
export function check(value: unknown, shape: FieldType, path: string, problems: string[] = []): string[] {
  if (value === null || value === undefined) return problems; // omitted (Go's zero value)
  if (Array.isArray(shape)) {
    if (!Array.isArray(value)) return [...problems, `${path}: expected a list`];
    value.forEach((item, index) => check(item, shape[0], `${path}[${index}]`, problems));
    return problems;
  }
  if (typeof shape === 'object') {
    if (typeof value !== 'object' || Array.isArray(value)) return [...problems, `${path}: expected an object`];
    for (const [field, fieldValue] of Object.entries(value as Record<string, unknown>)) {
      if (!(field in shape)) problems.push(`${path}.${field}: unknown field`);
      else check(fieldValue, shape[field]!, `${path}.${field}`, problems);
    }
    return problems;
  }
  const ok = {
    string: () => typeof value === 'string',
    int: () => Number.isInteger(value),
    number: () => typeof value === 'number',
    bool: () => typeof value === 'boolean',
    // Go's time.Duration in JSON: integer nanoseconds, never "10s".
    duration: () => Number.isInteger(value),
    strings: () => Array.isArray(value) && value.every((item) => typeof item === 'string'),
    stringMap: () => typeof value === 'object' && !Array.isArray(value) && Object.values(value as object).every((item) => typeof item === 'string'),
    any: () => true,
  }[shape]();
  if (!ok) problems.push(`${path}: expected ${shape === 'duration' ? 'integer nanoseconds' : shape}, got ${JSON.stringify(value)}`);
  return problems;
}

/** POST /v1/deployment/promote/:id: api/deployments.go `DeploymentPromoteRequest` (with the write request's fields). */
export const DeploymentPromoteRequest: Struct = { DeploymentID: 'string', All: 'bool', Groups: 'strings', Region: 'string', Namespace: 'string', SecretID: 'string' };
