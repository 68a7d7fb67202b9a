import type { Logger } from 'pino';
import type { Clock } from '../../../contract/clock.js';
import { EventRing } from '../event-ring.js';
import type { JobSpec } from '../../domain/job.js';
import type { ReplicaEvent, ReplicaJob } from './replica-state.js';

export interface PodmanJob extends ReplicaJob {
  events: EventRing;
}

/** What the podman driver was asked to run, one job per agent, with each job's replicas and events. */
export class JobTable {
  private readonly jobs = new Map<string, PodmanJob>();

  constructor(
    private readonly clock: Clock,
    private readonly logger: Logger,
  ) {}

  get(agentId: string): PodmanJob | undefined {
    return this.jobs.get(agentId);
  }

  has(agentId: string): boolean {
    return this.jobs.has(agentId);
  }

  all(): PodmanJob[] {
    return [...this.jobs.values()];
  }

  /** Holds `spec` for its agent; a spec older than the one held is ignored (a late retry of an earlier deploy). */
  want(spec: JobSpec): void {
    const job = this.jobs.get(spec.agentId);
    if (!job) this.jobs.set(spec.agentId, { spec, replicas: new Map(), events: new EventRing() });
    else if (spec.version >= job.spec.version) job.spec = spec;
  }

  /** Holds exactly `specs`: the jobs of other agents are dropped (their containers become strays). */
  wantOnly(specs: JobSpec[]): void {
    const wanted = new Set(specs.map((spec) => spec.agentId));
    for (const agentId of [...this.jobs.keys()]) if (!wanted.has(agentId)) this.jobs.delete(agentId);
    for (const spec of specs) this.want(spec);
  }

  /** False when the agent has no job. */
  scale(agentId: string, count: number): boolean {
    const job = this.jobs.get(agentId);
    if (!job) return false;
    job.spec = { ...job.spec, count };
    return true;
  }

  forget(agentId: string): void {
    this.jobs.delete(agentId);
  }

  /** Adds the event to its job's events (none once the job is gone) and to the log. */
  record(agentId: string, { replicaId, type, message }: ReplicaEvent): void {
    const job = this.jobs.get(agentId);
    if (!job) return;
    job.events.add({ at: this.clock.now(), replicaId, type, message });
    this.logger.info({ agent_id: agentId, replica_id: replicaId, event: type }, message);
  }
}
