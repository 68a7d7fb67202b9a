import type { JobSpec, JobStatus, Parking, RolloutProgress } from '../domain/job.js';
import type { LogEntry, LogLevel } from '../domain/log-entry.js';

/**
 * What the control API asks of whatever runs containers. Shaped after Nomad's model so
 * both drivers fit it: one job per agent, a count of replicas, each replica with an id,
 * an address, a state and events. Drivers are chosen once at start (ORCHESTRATOR).
 */
export interface Orchestrator {
  readonly name: string;
  /**
   * Registers the agent's job, or replaces it: a new version rolls out health-gated. A spec
   * with `stable` is a canary beside that version (JobSpec.stable).
   */
  submit(spec: JobSpec): Promise<void>;
  /**
   * Whether the driver can keep a parked agent's replica frozen in memory (warm parking,
   * issue 40); without, a parked agent's replicas stop like any scale to 0.
   */
  readonly warmParking: boolean;
  /**
   * Changes the replica count of the job's current version. `parked`: the platform parks the
   * agent (a count of 0), and how its replica is kept until a wake scales it up again.
   */
  scale(agentId: string, count: number, parked?: Parking): Promise<void>;
  /** Stops and removes every replica and what the job owned (network, variables). */
  remove(agentId: string): Promise<void>;
  /**
   * Makes the set of jobs exactly `specs`: adopts what already runs, starts what is
   * missing, removes the rest, except the agents in `keep`, whose jobs stay exactly as
   * they are (neither submitted nor removed).
   */
  reconcile(specs: JobSpec[], options?: ReconcileOptions): Promise<void>;
  status(agentId: string): Promise<JobStatus | null>;
  logs(agentId: string, query: LogQuery): Promise<LogEntry[]>;
  metrics(agentId: string): Promise<ReplicaMetrics[]>;
  /**
   * Called with an agent id whenever something about its replicas changed, and once at
   * the end of each submit, scale and remove of it, changed or not: the platform refreshes
   * an agent only when told (services/agent-events.ts, ReplicasChanged).
   */
  onChange(listener: (agentId: string) => void): void;
  /** Called with each step of a rollout (pulling, starting, health_check, routing, draining). */
  onProgress(listener: (progress: RolloutProgress) => void): void;
  close(): Promise<void>;
}

export interface ReconcileOptions {
  /**
   * Agents whose job the control API could not build this pass (a sealed value no master
   * key opens, a damaged row): whatever runs for them is left running, untouched, until a
   * pass or a submit hands over their job again.
   */
  keep?: readonly string[];
}

export interface LogQuery {
  limit: number;
  level?: LogLevel;
  replicaId?: string;
  /** Only the lines written in this invocation (LogEntry.invocation_id). */
  invocationId?: string;
}

export interface ReplicaMetrics {
  replicaId: string;
  cpuPercent: number;
  memoryMb: number;
  memoryLimitMb: number;
}
