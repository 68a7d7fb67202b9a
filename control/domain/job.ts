import type { RolloutPhase } from './deployment.js';
import type { RegistryCredential } from './registry-auth.js';

/**
 * The job model the platform and its drivers share: what to run for an agent (built by
 * job-spec.ts) and what runs (read back by agent-status.ts). The Orchestrator interface
 * (control/orchestrator/types.ts) takes and returns these.
 */

export interface JobSpec {
  agentId: string;
  /** The agent's URL name: the Nomad driver names and tags its Consul service with it. */
  slug: string;
  /** Who the job belongs to, for operators (Nomad shows them in the job's Name and Meta). */
  name: string;
  accountId: string;
  url: string;
  /** The agent's version: replicas of older versions are replaced by a rollout. */
  version: number;
  image: string;
  /** The port the container listens on. */
  port: number;
  count: number;
  cpu: number;
  memoryMb: number;
  /** Plain environment, visible to whoever can read the job. */
  env: Record<string, string>;
  /** Secret environment (model key, secret deploy.env): delivered so that it never appears in a job listing. */
  secretEnv: Record<string, string>;
  /**
   * Credentials for `image`'s registry (deploy.registry_auth), opened: absent without. Like
   * secretEnv, delivered so that they never appear in a job listing, a log or a process's
   * arguments or environment.
   */
  registryAuth?: RegistryCredential;
  /**
   * The platform's runtime image (deploy.image left out): pulled with the host's own
   * registry credentials, the operator's. Any other image is the agent's, pulled with its
   * registryAuth or with none.
   */
  platformImage?: boolean;
  /** How health is checked: the platform runtime serves /health, a custom image maybe nothing but a port. */
  check: 'http' | 'tcp';
  scaling: { enabled: boolean; min: number; max: number };
  /**
   * While a canary runs (issue 36), the version that keeps serving beside this one: this
   * spec is the canary (its `count` is the canary's replicas), `stable` the previous version
   * at its own count. Its own `stable` is not read. Promoting submits the canary's version
   * again without it (and with the agent's full count); aborting submits `stable` itself.
   * The podman driver runs both; the Nomad driver registers the canary's version with
   * Nomad's own canaries beside the stable allocations (nomad/job-spec.ts).
   */
  stable?: JobSpec;
  /** Set while the platform keeps the agent parked at a count of 0 (issue 40): how its replica is kept meanwhile. */
  parked?: Parking;
}

/**
 * How a parked agent's replica is kept until a request wakes it (docs/scaling.md, "Warm and
 * cold parking"): frozen in memory until `warmUntil`, then stopped; stopped at once when
 * null. Only a driver with `warmParking` freezes; the others stop it (a count of 0).
 */
export interface Parking {
  warmUntil: Date | null;
}

export type ReplicaState =
  | 'pending' // accepted, not placed yet
  | 'starting' // placed, not yet routable
  | 'running' // routable
  | 'restarting' // exited, waiting for its backoff
  | 'failed' // could not start (image, runtime)
  | 'crashed' // exited past the restart budget
  | 'stopping';

export interface Replica {
  id: string;
  version: number;
  state: ReplicaState;
  /** `ip:port` where the edge reaches this replica; null until placed. */
  address: string | null;
  restarts: number;
  startedAt: Date | null;
  error: string | null;
}

export interface JobEvent {
  at: Date;
  replicaId: string | null;
  type: string;
  message: string;
}

/**
 * A step of a rollout as a driver sees it, for the deployment's progress stream. Drivers
 * report the steps between queued and the end; the platform decides the end (succeeded,
 * failed) from the job's status, the same way for both drivers.
 */
export interface RolloutProgress {
  agentId: string;
  /** The job version (JobSpec.version) being rolled out. */
  version: number;
  phase: Exclude<RolloutPhase, 'queued' | 'succeeded' | 'failed'>;
  replicaId: string | null;
  message: string;
  at: Date;
  /** The orchestrator's own version of the job (Nomad's job Version), once it is known. */
  orchestratorVersion?: number;
}

export interface JobStatus {
  agentId: string;
  /** The version being run or rolled out; the canary's while a canary runs. */
  version: number;
  /** The replicas asked of `version` (while a canary runs, the canary's). */
  count: number;
  /** While a canary runs: the stable version serving beside it (JobSpec.stable), so its replicas can be told from the canary's. */
  stableVersion?: number;
  replicas: Replica[];
  events: JobEvent[];
}
