/**
 * The Nomad and Consul JSON this driver sends and reads, field for field as in Nomad's
 * api/jobs.go, api/tasks.go, api/services.go, api/resources.go, api/scaling.go,
 * api/variables.go, api/allocations.go and Consul's api/health.go. Nomad decodes job
 * JSON case-insensitively and silently drops fields it does not know, so a misspelled
 * field here would be lost without an error: only what we set is declared, with
 * Nomad's exact spelling. Durations are integer nanoseconds.
 */

/** Nanoseconds, as Nomad's time.Duration fields travel in JSON. */
export type Nanoseconds = number;

export interface NomadJob {
  ID: string;
  Name: string;
  Type: 'service';
  Namespace: string;
  Region?: string;
  Datacenters: string[];
  NodePool: string;
  Meta: Record<string, string>;
  TaskGroups: NomadTaskGroup[];
}

export interface NomadTaskGroup {
  Name: string;
  Count: number;
  Networks: NomadNetworkResource[];
  Services: NomadService[];
  RestartPolicy: NomadRestartPolicy;
  ReschedulePolicy: NomadReschedulePolicy;
  Update: NomadUpdateStrategy;
  ShutdownDelay: Nanoseconds;
  Scaling: NomadScalingPolicy;
  Meta: Record<string, string>;
  Tasks: NomadTask[];
}

export interface NomadNetworkResource {
  Mode: 'host' | 'bridge';
  DynamicPorts: NomadPort[];
}

export interface NomadPort {
  Label: string;
  /** 0 asks Nomad for a dynamic host port. */
  Value: number;
  /** The container port the host port maps to. */
  To: number;
}

export interface NomadService {
  Name: string;
  Tags: string[];
  /** What a canary allocation registers instead of Tags, until it is promoted. */
  CanaryTags: string[];
  PortLabel: string;
  Provider: 'consul';
  Checks: NomadServiceCheck[];
}

export interface NomadServiceCheck {
  Name: string;
  Type: 'http' | 'tcp';
  /** Only for `http` checks. */
  Path?: string;
  Interval: Nanoseconds;
  Timeout: Nanoseconds;
}

export interface NomadRestartPolicy {
  Attempts: number;
  Interval: Nanoseconds;
  Delay: Nanoseconds;
  Mode: 'fail' | 'delay';
}

export interface NomadReschedulePolicy {
  Attempts: number;
  Interval: Nanoseconds;
  Delay: Nanoseconds;
  DelayFunction: 'constant' | 'exponential' | 'fibonacci';
  MaxDelay: Nanoseconds;
  Unlimited: boolean;
}

export interface NomadUpdateStrategy {
  MaxParallel: number;
  HealthCheck: 'checks' | 'task_states' | 'manual';
  MinHealthyTime: Nanoseconds;
  HealthyDeadline: Nanoseconds;
  ProgressDeadline: Nanoseconds;
  AutoRevert: boolean;
  /** Allocations of a changed job placed beside the old ones, which keep running until the deployment is promoted or failed. */
  Canary: number;
  AutoPromote: boolean;
}

/**
 * A group's scaling block, read by the Nomad Autoscaler. `Enabled` is always sent: Nomad
 * turns a missing one into true (api/scaling.go, `ScalingPolicy.Canonicalize`), which would
 * hand the count of an agent without auto-scaling to the autoscaler.
 */
export interface NomadScalingPolicy {
  Type: 'horizontal';
  Min: number;
  Max: number;
  Enabled: boolean;
  /** Autoscaler policy in HCL-to-JSON shape: every block is a list of objects. */
  Policy: Record<string, unknown>;
}

export interface NomadTask {
  Name: string;
  Driver: 'docker';
  Config: DockerTaskConfig;
  /** Plain environment only: whoever can read the job reads it. */
  Env: Record<string, string>;
  Templates?: NomadTemplate[];
  /** Values for interpolation only, never in the task's environment (api/tasks.go `Secret`; Nomad 1.11+). */
  Secrets?: NomadSecret[];
  /** Named workload identities besides the default one (api/tasks.go, `Task.Identities`). */
  Identities?: NomadWorkloadIdentity[];
  Resources: NomadResources;
  KillTimeout: Nanoseconds;
  Meta: Record<string, string>;
}

/**
 * A task's `secret` block (api/tasks.go, `Secret`): the client's secrets hook reads it
 * before the task starts and offers each item as `${secret.<Name>.<item>}` to the task's
 * interpolation (client/allocrunner/taskrunner/secrets_hook.go; client/taskenv/env.go,
 * `AllValues`), but not to its environment.
 */
export interface NomadSecret {
  Name: string;
  Provider: 'nomad';
  Path: string;
}

/**
 * An `identity` block (api/tasks.go, `WorkloadIdentity`): a JWT Nomad signs for the task
 * with these audiences and time to live, renews before it expires, and writes to
 * `secrets/nomad_<Name>.jwt` when `File` (client/allocrunner/taskrunner/identity_hook.go,
 * `setAltToken`) or puts in `NOMAD_TOKEN_<Name>` when `Env`.
 */
export interface NomadWorkloadIdentity {
  Name: string;
  Audience: string[];
  Env: boolean;
  File: boolean;
  TTL: Nanoseconds;
  /** "" (noop): a renewed token is only written, the task reads the file again. */
  ChangeMode: '' | 'noop' | 'restart' | 'signal';
}

/** The docker driver's `config` (checked by the client, not the server: a typo only shows as a "Failed Validation" event). */
export interface DockerTaskConfig {
  image: string;
  ports: string[];
  cap_drop: string[];
  cap_add: string[];
  security_opt: string[];
  pids_limit: number;
  cpu_hard_limit: boolean;
  /** drivers/docker/config.go `DockerAuth`, a block: a list of one object in JSON. */
  auth?: DockerAuth[];
}

export interface DockerAuth {
  username: string;
  password: string;
  server_address: string;
}

export interface NomadTemplate {
  EmbeddedTmpl: string;
  DestPath: string;
  Envvars: boolean;
  ChangeMode: 'restart' | 'noop' | 'signal';
}

export interface NomadResources {
  /** MHz. */
  CPU: number;
  MemoryMB: number;
}

/** PUT /v1/jobs. */
export interface JobRegisterRequest {
  /** The job the driver builds, or one read from Nomad and changed (scale.ts). */
  Job: NomadJob | NomadJobRead;
  /** Keeps each group's current count instead of the one in Job (so a redeploy does not undo the autoscaler). */
  PreserveCounts: boolean;
  /** Only if the job's JobModifyIndex is still `JobModifyIndex` (nomad/structs/job.go, `Job.EnforceIndex`). */
  EnforceIndex?: boolean;
  JobModifyIndex?: number;
}

export interface JobRegisterResponse {
  EvalID: string;
  JobModifyIndex: number;
  Warnings: string;
}

/** POST /v1/job/:id/scale. */
export interface ScalingRequest {
  Count: number;
  /** As Nomad's api.Jobs.Scale sends it: the job and the group. */
  Target: { Job: string; Group: string };
  Message: string;
  PolicyOverride: boolean;
}

/** GET /v1/jobs?prefix= */
export interface JobListStub {
  ID: string;
  Name: string;
  Status: string;
  Version: number;
  Meta?: Record<string, string> | null;
}

/** GET /v1/job/:id (only what the driver reads). */
export interface NomadJobRead {
  ID: string;
  Version: number;
  /** What a registration over this read must enforce (jobs-api.ts, `registerOver`); Nomad always sends it. */
  JobModifyIndex?: number;
  Stop: boolean;
  Meta: Record<string, string> | null;
  TaskGroups: { Name: string; Count: number; Scaling?: { Min: number | null; Max: number; [field: string]: unknown } | null; [field: string]: unknown }[];
  /** The rest of the job as Nomad holds it: sent back whole when the driver registers it again (scale.ts). */
  [field: string]: unknown;
}

/**
 * GET /v1/job/:id/versions (command/agent/job_endpoint.go, `jobVersions`: a
 * structs.JobVersionsResponse), the versions Nomad still tracks, the newest first.
 */
export interface NomadJobVersions {
  Versions: NomadJobRead[];
}

/**
 * GET /v1/job/:id/deployment: the job's latest deployment (nomad/structs/deployment.go,
 * `Deployment`; only what the driver reads), or null when it never had one.
 */
export interface NomadDeployment {
  ID: string;
  JobVersion: number;
  Status: 'running' | 'paused' | 'failed' | 'successful' | 'cancelled' | 'pending' | 'blocked' | 'unblocking' | 'initializing';
  StatusDescription: string;
  TaskGroups: Record<string, { DesiredCanaries: number; DesiredTotal: number; PlacedCanaries: string[] | null; Promoted: boolean; AutoRevert: boolean }> | null;
}

/** POST /v1/deployment/promote/:id (api/deployments.go, `DeploymentPromoteRequest`). */
export interface DeploymentPromoteRequest {
  DeploymentID: string;
  All: boolean;
}

/** What promote and fail answer (structs.DeploymentUpdateResponse). */
export interface DeploymentUpdateResponse {
  EvalID: string;
  DeploymentModifyIndex: number;
  /** Set when failing it rolled the job back to its latest stable version (auto_revert). */
  RevertedJobVersion?: number;
}

/** PUT /v1/var/:path */
export interface NomadVariable {
  Namespace: string;
  Path: string;
  Items: Record<string, string>;
}

export interface NomadTaskEvent {
  Type: string;
  Time: number;
  Message?: string;
  DisplayMessage?: string;
  /** Deprecated in Nomad for Details, still sent: the driver's own message (a "Driver" event). */
  DriverMessage?: string;
  DriverError?: string;
  ExitCode?: number;
  Signal?: number;
  RestartReason?: string;
  FailsTask?: boolean;
  Details?: Record<string, string> | null;
}

export interface NomadTaskState {
  State: 'pending' | 'running' | 'dead';
  Failed: boolean;
  Restarts: number;
  StartedAt: string | null;
  FinishedAt: string | null;
  Events: NomadTaskEvent[] | null;
}

/** GET /v1/job/:id/allocations (AllocationListStub, only what the driver reads). */
export interface AllocationListStub {
  ID: string;
  Name: string;
  NodeName?: string;
  JobID: string;
  JobVersion: number;
  TaskGroup: string;
  ClientStatus: 'pending' | 'running' | 'complete' | 'failed' | 'lost' | 'unknown';
  DesiredStatus: 'run' | 'stop' | 'evict';
  DesiredDescription?: string;
  CreateTime: number;
  ModifyTime: number;
  TaskStates: Record<string, NomadTaskState> | null;
  AllocatedResources?: { Shared?: { Ports?: { Label: string; Value: number; To: number; HostIP: string }[] | null } } | null;
}

/** GET /v1/client/allocation/:id/stats */
export interface AllocResourceUsage {
  ResourceUsage: {
    MemoryStats: { RSS: number; Usage: number; Cache?: number };
    /** Percent is a percent of one core. */
    CpuStats: { Percent: number; TotalTicks?: number };
  };
  Timestamp: number;
}

/** One frame of GET /v1/client/fs/logs/:alloc (non-plain): `{}` is a heartbeat. */
export interface StreamFrame {
  Offset?: number;
  /** base64 bytes. */
  Data?: string;
  File?: string;
  FileEvent?: string;
}

/** GET /v1/health/state/:state (Consul's api/health.go `HealthCheck`, only what the driver reads). */
export interface ConsulHealthCheck {
  Node: string;
  CheckID: string;
  Name: string;
  Status: 'passing' | 'warning' | 'critical' | 'maintenance';
  ServiceID: string;
  ServiceName: string;
  ServiceTags: string[] | null;
}
