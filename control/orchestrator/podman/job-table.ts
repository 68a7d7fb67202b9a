import type { Logger } from 'pino';
import type { Clock } from '../../../contract/clock.js';
import { EventRing } from '../event-ring.js';
import type { JobSpec, Parking, RolloutProgress } from '../../domain/job.js';
import type { ParkingJob } from './parking.js';
import { stableBeside, type ReplicaEvent } from './replica-state.js';
import { progressOf } from './rollout-phases.js';

export interface PodmanJob extends ParkingJob {
  events: EventRing;
  /** The version whose image step (present, or pulled) was reported: once per version, not per tick. */
  imageReportedFor: number | null;
}

/** What the podman driver was asked to run, one job per agent, with each job's replicas and events. */
export class JobTable {
  private readonly jobs = new Map<string, PodmanJob>();
  private readonly progressListeners: ((progress: RolloutProgress) => void)[] = [];
  /** The agents the last reconcile kept (their job could not be built), see `wantOnly`. */
  private kept = new Set<string>();

  constructor(
    private readonly clock: Clock,
    private readonly logger: Logger,
  ) {}

  get(agentId: string): PodmanJob | undefined {
    return this.jobs.get(agentId);
  }

  all(): PodmanJob[] {
    return [...this.jobs.values()];
  }

  /**
   * Holds `spec` for its agent. A spec older than the one held is ignored (a late retry of
   * an earlier deploy), unless it aborts the held canary: it is the stable version that
   * canary runs beside. The canary's version may be deployed again after an abort, so its
   * image step is reported again then.
   */
  want(spec: JobSpec): void {
    const job = this.jobs.get(spec.agentId);
    if (!job) this.jobs.set(spec.agentId, { spec, replicas: new Map(), parked: null, events: new EventRing(), imageReportedFor: null });
    else if (spec.version >= job.spec.version) job.spec = spec;
    else if (abortsCanary(job.spec, spec)) {
      job.spec = spec;
      job.imageReportedFor = null;
    }
  }

  /**
   * Holds exactly `specs` and the jobs of `keep`, as they are: the jobs of other agents are
   * dropped (their containers become strays). A kept agent claims its containers and
   * network even without a job (after a restart, none is held), until the next call.
   */
  wantOnly(specs: JobSpec[], keep: readonly string[]): void {
    this.kept = new Set(keep);
    const wanted = new Set(specs.map((spec) => spec.agentId));
    for (const agentId of [...this.jobs.keys()]) if (!wanted.has(agentId) && !this.kept.has(agentId)) this.jobs.delete(agentId);
    for (const spec of specs) this.want(spec);
  }

  /** Whether the agent's containers and network are someone's: its job's, or kept by the last reconcile. */
  claims(agentId: string): boolean {
    return this.jobs.has(agentId) || this.kept.has(agentId);
  }

  /** False when the agent has no job. `parked`: the count of 0 parks the agent (JobSpec.parked); any other scale ends that. */
  scale(agentId: string, count: number, parked?: Parking): boolean {
    const job = this.jobs.get(agentId);
    if (!job) return false;
    const { parked: _ended, ...spec } = job.spec;
    job.spec = parked ? { ...spec, count, parked } : { ...spec, count };
    return true;
  }

  forget(agentId: string): void {
    this.jobs.delete(agentId);
    this.kept.delete(agentId);
  }

  /** Told of each rollout step, as `record` sees it (rollout-phases.ts). */
  onProgress(listener: (progress: RolloutProgress) => void): void {
    this.progressListeners.push(listener);
  }

  /** Adds the event to its job's events (none once the job is gone) and to the log, and tells progress listeners when it is a rollout step. */
  record(agentId: string, event: ReplicaEvent): void {
    const job = this.jobs.get(agentId);
    if (!job) return;
    const { replicaId, type, message } = event;
    const at = this.clock.now();
    job.events.add({ at, replicaId, type, message });
    this.logger.info({ agent_id: agentId, replica_id: replicaId, event: type }, message);
    const progress = progressOf(job, event, at);
    if (progress) for (const listener of this.progressListeners) listener(progress);
  }
}

/** `spec` goes back to the version the held canary runs beside: the canary is aborted. */
export const abortsCanary = (held: JobSpec, spec: JobSpec): boolean =>
  spec.stable === undefined && stableBeside(held)?.version === spec.version;
