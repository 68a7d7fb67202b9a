import type { Redis } from 'ioredis';
import { systemClock } from '../../contract/clock.js';
import { edgeKeyNames } from '../../contract/edge-keys.js';
import type { JobSpec, JobStatus, Replica, RolloutProgress } from '../../control/domain/job.js';
import type { LogEntry } from '../../control/domain/log-entry.js';
import type { StartedDriver } from '../../control/orchestrator/create.js';
import type { LogQuery, Orchestrator, ReconcileOptions, ReplicaMetrics } from '../../control/orchestrator/types.js';
import { waitFor } from './wait.js';

/**
 * A driver for tests that run no container: it keeps the jobs it is handed and reports
 * them, with no replica placed (an agent asked to run stays `pending`) unless a test says
 * one runs (`runReplica`) or that a version crashes (`failNextSubmitted`), and tells its listeners after each submit, scale and remove, as
 * the real drivers do. It counts what it is asked, so a test can hold the platform to how
 * often it reads a status.
 */
export class InMemoryDriver implements Orchestrator {
  readonly name = 'in-memory';
  readonly warmParking = false;
  private readonly jobs = new Map<string, JobSpec>();
  private readonly listeners: ((agentId: string) => void)[] = [];
  private readonly statusReads = new Map<string, number>();
  private readonly submits = new Map<string, number>();
  /** Per agent, the address of the one replica a test said runs. */
  private readonly running = new Map<string, string>();
  /** Per agent, the error `failNextSubmitted` armed: the next submit takes it. */
  private readonly failureArmed = new Map<string, string>();
  /** Per agent, the versions whose replicas report `crashed`, with their error. */
  private readonly failedVersions = new Map<string, Map<number, string>>();

  async submit(spec: JobSpec): Promise<void> {
    const failure = this.failureArmed.get(spec.agentId);
    if (failure !== undefined) {
      this.failureArmed.delete(spec.agentId);
      this.failedVersions.set(spec.agentId, (this.failedVersions.get(spec.agentId) ?? new Map()).set(spec.version, failure));
    }
    this.jobs.set(spec.agentId, spec);
    this.submits.set(spec.agentId, this.submitsOf(spec.agentId) + 1);
    this.notify(spec.agentId);
  }

  async scale(agentId: string, count: number): Promise<void> {
    const job = this.jobs.get(agentId);
    if (job) this.jobs.set(agentId, { ...job, count });
    this.notify(agentId);
  }

  async remove(agentId: string): Promise<void> {
    this.jobs.delete(agentId);
    this.notify(agentId);
  }

  /** Holds exactly `specs`, and the jobs of `keep` as they were; the caller refreshes every agent after it. */
  async reconcile(specs: JobSpec[], { keep = [] }: ReconcileOptions = {}): Promise<void> {
    for (const agentId of this.jobs.keys()) if (!keep.includes(agentId)) this.jobs.delete(agentId);
    for (const spec of specs) this.jobs.set(spec.agentId, spec);
  }

  async status(agentId: string): Promise<JobStatus | null> {
    this.statusReads.set(agentId, this.statusReadsOf(agentId) + 1);
    const job = this.jobs.get(agentId);
    if (!job) return null;
    const address = this.running.get(agentId);
    const failed = this.failedVersions.get(agentId);
    const replicaOf = (id: string, version: number, at: string): Replica => {
      const error = failed?.get(version);
      // A replica past its restart budget, as the podman driver reports it: no address, so nothing routes to it.
      if (error !== undefined) return { id, version, state: 'crashed', address: null, restarts: CRASH_RESTARTS + 1, startedAt: systemClock.now(), error };
      return { id, version, state: 'running', address: at, restarts: 0, startedAt: systemClock.now(), error: null };
    };
    const replicas = address === undefined ? [] : [replicaOf(`${agentId}-1`, job.version, address)];
    // A canary's job (JobSpec.stable) runs its stable version too: one replica of it, on the next port.
    if (address !== undefined && job.stable) replicas.push(replicaOf(`${agentId}-stable`, job.stable.version, nextPort(address)));
    return { agentId, version: job.version, count: job.count, replicas, events: [], ...(job.stable ? { stableVersion: job.stable.version } : {}) };
  }

  /** From now on the agent's job (once submitted) reports one replica running at `address`; the listeners are told. */
  runReplica(agentId: string, address: string): void {
    this.running.set(agentId, address);
    this.notify(agentId);
  }

  /**
   * For a test of a rollout that fails: the version of the next job submitted for the agent
   * (a canary's, or a promoted canary's, which is the same version again) never runs, its
   * replica `crashed` with `error` from then on. A canary's stable version beside it, and
   * whatever is submitted after, run as before. Takes effect with `runReplica`, as running does.
   */
  failNextSubmitted(agentId: string, error = `exited with code 1; restarted ${CRASH_RESTARTS} times`): void {
    this.failureArmed.set(agentId, error);
  }

  async logs(_agentId: string, _query: LogQuery): Promise<LogEntry[]> {
    return [];
  }

  async metrics(_agentId: string): Promise<ReplicaMetrics[]> {
    return [];
  }

  onChange(listener: (agentId: string) => void): void {
    this.listeners.push(listener);
  }

  /** Nothing rolls out here, so no step is ever reported. */
  onProgress(_listener: (progress: RolloutProgress) => void): void {}

  async close(): Promise<void> {}

  /** The job held for the agent, if any. */
  jobOf(agentId: string): JobSpec | undefined {
    return this.jobs.get(agentId);
  }

  statusReadsOf(agentId: string): number {
    return this.statusReads.get(agentId) ?? 0;
  }

  submitsOf(agentId: string): number {
    return this.submits.get(agentId) ?? 0;
  }

  private notify(agentId: string): void {
    for (const listener of this.listeners) listener(agentId);
  }
}

/** The restart budget a crashed replica used up (test/support/control-harness.ts gives podman 2). */
const CRASH_RESTARTS = 2;

const nextPort = (address: string) => {
  const colon = address.lastIndexOf(':');
  return `${address.slice(0, colon)}:${Number(address.slice(colon + 1)) + 1}`;
};

/**
 * The in-memory driver as composition takes a driver. It scales nothing by itself, and
 * runs no replica for the platform's autoscaler to measure, so none is built for it.
 */
export function inMemoryDriver(): StartedDriver & { orchestrator: InMemoryDriver } {
  return { orchestrator: new InMemoryDriver(), clock: systemClock, autoscaledBy: 'orchestrator' };
}

/**
 * What a test of the edge needs of a deployed agent: a routable replica at `address`, as
 * the in-memory driver reports it and the control API projects it (the refresh that
 * follows writes the upstream set). Resolves once the edge has it.
 */
export async function runReplica(control: { driver: Orchestrator; redis: Redis }, agent: { id: string; slug: string }, address: string): Promise<void> {
  if (!(control.driver instanceof InMemoryDriver)) throw new Error('runReplica is for a control on the in-memory driver');
  control.driver.runReplica(agent.id, address);
  await waitFor('the replica at the edge', async () => ((await control.redis.sismember(edgeKeyNames.upstreams(agent.slug), address)) ? true : undefined), 10_000, 10);
}
