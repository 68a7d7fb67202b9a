/**
 * What the control API asks of whatever runs containers. Shaped after Nomad's model so
 * both drivers fit it: one job per agent, a count of replicas, each replica with an id,
 * an address, a state and events. Drivers are chosen once at start (ORCHESTRATOR).
 */
export interface Orchestrator {
  readonly name: string;
  /** Registers the agent's job, or replaces it: a new version rolls out health-gated. */
  submit(spec: JobSpec): Promise<void>;
  /** Changes the replica count of the job's current version. */
  scale(agentId: string, count: number): Promise<void>;
  /** Stops and removes every replica and what the job owned (network, variables). */
  remove(agentId: string): Promise<void>;
  /** Makes the set of jobs exactly `specs`: adopts what already runs, starts what is missing, removes the rest. */
  reconcile(specs: JobSpec[]): Promise<void>;
  status(agentId: string): Promise<JobStatus | null>;
  logs(agentId: string, query: LogQuery): Promise<LogEntry[]>;
  metrics(agentId: string): Promise<ReplicaMetrics[]>;
  /** Called with an agent id whenever something about its replicas changed. */
  onChange(listener: (agentId: string) => void): void;
  close(): Promise<void>;
}

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
  /** How health is checked: the platform runtime serves /health, a custom image maybe nothing but a port. */
  check: 'http' | 'tcp';
  scaling: { enabled: boolean; min: number; max: number };
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

export interface JobStatus {
  agentId: string;
  /** The version being run or rolled out. */
  version: number;
  count: number;
  replicas: Replica[];
  events: JobEvent[];
}

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

export interface LogQuery {
  limit: number;
  level?: LogLevel;
  replicaId?: string;
}

export interface LogEntry {
  /** Orders entries across replicas; an SSE client resumes after it with Last-Event-ID. */
  id: string;
  agent_id: string;
  replica_id: string;
  timestamp: string;
  level: LogLevel;
  message: string;
  source: 'stdout' | 'stderr';
}

export interface ReplicaMetrics {
  replicaId: string;
  cpuPercent: number;
  memoryMb: number;
  memoryLimitMb: number;
}
