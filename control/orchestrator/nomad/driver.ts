import type { Logger } from 'pino';
import type { Clock } from '../../clock.js';
import type { JobEvent, JobSpec, JobStatus, LogEntry, LogQuery, Orchestrator, ReplicaMetrics } from '../types.js';
import type { AllocationListStub } from './api-types.js';
import { ConsulHealthWatch, type PassingInstances } from './consul-watch.js';
import type { ApiClient } from './http-client.js';
import { agentIdOf, jobId, nomadJobFor, serviceName } from './job-spec.js';
import { JobsApi } from './jobs-api.js';
import { recentLines, toEntries, type LogStream } from './logs.js';
import { planReconcile } from './reconcile.js';
import { scaleJob } from './scale.js';
import type { NomadSettings } from './settings.js';
import { metricsFrom } from './stats.js';
import { eventsFrom, replicasFrom } from './status.js';
import { deleteSecrets, writeSecrets } from './variables.js';
import type { NomadJobRead } from './api-types.js';

interface HeldJob {
  spec: JobSpec;
  /** The driver's own events (submitted, scaled); Nomad's task events are added when read. */
  events: JobEvent[];
  /** Allocation id → first "Failed to pull" message: Nomad keeps only 10 events per task. */
  pullFailures: Map<string, string>;
  /** Nomad job version → our version, read back from the job's Meta after each registration. */
  versions: Map<number, number>;
  watch: ConsulHealthWatch;
  fingerprint: string;
  /** The last allocations read: status falls back to them while Nomad cannot be reached. */
  allocations: AllocationListStub[];
}

const LEVEL_RANK = { debug: 0, info: 1, warn: 2, error: 3 } as const;
const KEPT_EVENTS = 50;

/**
 * Runs agents as Nomad jobs (DESIGN.md §5): one job `agent-<id>` per agent, secrets in a
 * Nomad Variable, replicas from the job's allocations, routable replicas from Consul's
 * health API. Nomad restarts, reschedules and rolls out; this driver only registers,
 * observes and reports. A poll of each job's allocations and one Consul watch per agent
 * call the onChange listeners when something changed.
 */
export class NomadDriver implements Orchestrator {
  readonly name = 'nomad';
  private readonly jobs = new Map<string, HeldJob>();
  private readonly listeners: ((agentId: string) => void)[] = [];
  private readonly api: JobsApi;
  private queue: Promise<unknown> = Promise.resolve();
  private timer: NodeJS.Timeout | undefined;
  private polling = false;
  private closed = false;

  constructor(
    private readonly nomad: ApiClient,
    private readonly consul: ApiClient,
    private readonly settings: NomadSettings,
    private readonly clock: Clock,
    private readonly logger: Logger,
  ) {
    this.api = new JobsApi(nomad, settings.namespace, settings.region);
  }

  start(): void {
    this.timer = setInterval(() => void this.poll(), this.settings.pollIntervalMs);
  }

  onChange(listener: (agentId: string) => void): void {
    this.listeners.push(listener);
  }

  submit(spec: JobSpec): Promise<void> {
    return this.serial(async () => {
      const held = this.hold(spec);
      if (spec.version >= held.spec.version) held.spec = spec;
      await this.register(held.spec);
      this.event(spec.agentId, 'submitted', `version ${spec.version}, ${spec.count} replica(s) of ${spec.image}`);
      this.notify(spec.agentId);
    });
  }

  scale(agentId: string, count: number): Promise<void> {
    return this.serial(async () => {
      const held = this.jobs.get(agentId);
      if (!held) return;
      held.spec = { ...held.spec, count };
      const how = await scaleJob(this.api, held.spec, () => this.register(held.spec, { setCount: true }));
      if (how === 'scaled') await this.learnVersion(agentId);
      this.event(agentId, 'scaled', `${count} replica(s)${how === 'registered' ? ' (job registered again: Nomad refused the scale endpoint)' : ''}`);
      this.notify(agentId);
    });
  }

  remove(agentId: string): Promise<void> {
    return this.serial(async () => {
      await this.removeJob(agentId);
      this.notify(agentId);
    });
  }

  reconcile(specs: JobSpec[]): Promise<void> {
    return this.serial(async () => {
      const existing = new Map<string, NomadJobRead>();
      for (const stub of await this.api.list('agent-')) {
        const agentId = agentIdOf(stub.ID);
        if (!agentId) continue;
        const job = await this.api.read(stub.ID);
        if (job) existing.set(agentId, job);
      }
      for (const agentId of [...this.jobs.keys()]) {
        if (!specs.some((spec) => spec.agentId === agentId) && !existing.has(agentId)) await this.release(agentId);
      }
      for (const action of planReconcile(specs, existing)) {
        try {
          if (action.kind === 'remove') {
            await this.removeJob(action.agentId);
            continue;
          }
          const held = this.hold(action.spec);
          held.spec = action.spec;
          if (action.kind === 'adopt') {
            this.remember(held, existing.get(action.spec.agentId)!);
            this.event(action.spec.agentId, 'adopted', `found job ${jobId(action.spec.agentId)} at version ${action.spec.version}`);
          } else if (action.kind === 'scale') {
            this.remember(held, existing.get(action.spec.agentId)!);
            await scaleJob(this.api, held.spec, () => this.register(held.spec, { setCount: true }));
            await this.learnVersion(action.spec.agentId);
          } else {
            await this.register(action.spec);
            this.event(action.spec.agentId, 'submitted', `version ${action.spec.version}, ${action.spec.count} replica(s) of ${action.spec.image}`);
          }
        } catch (error) {
          // One agent Nomad refuses must not keep the others from being reconciled.
          this.logger.error({ err: error, agent_id: 'agentId' in action ? action.agentId : action.spec.agentId }, 'reconciling a Nomad job failed');
        }
      }
      for (const agentId of this.jobs.keys()) this.notify(agentId);
    });
  }

  async status(agentId: string): Promise<JobStatus | null> {
    const held = this.jobs.get(agentId);
    if (!held) return null;
    return this.statusFrom(held, await this.readAllocations(held));
  }

  /**
   * The job's allocations, or the last ones read when Nomad cannot answer: the routable
   * set then still follows Consul, which keeps working without Nomad's servers.
   */
  private async readAllocations(held: HeldJob): Promise<AllocationListStub[]> {
    try {
      held.allocations = await this.api.allocations(jobId(held.spec.agentId));
    } catch (error) {
      this.logger.warn({ err: error, agent_id: held.spec.agentId }, 'reading allocations from Nomad failed; using the last ones read');
    }
    return held.allocations;
  }

  async logs(agentId: string, query: LogQuery): Promise<LogEntry[]> {
    const allocations = (await this.api.allocations(jobId(agentId))).filter((a) => !query.replicaId || a.ID === query.replicaId);
    const readAt = this.clock.now();
    const perStream = await Promise.all(
      allocations.flatMap((allocation) =>
        (['stdout', 'stderr'] as LogStream[]).map(async (stream) => {
          try {
            return toEntries(await recentLines(this.nomad, allocation.ID, stream, this.settings.namespace), agentId, allocation, stream, readAt);
          } catch {
            return []; // garbage-collected, or its client is gone
          }
        }),
      ),
    );
    const minimum = LEVEL_RANK[query.level ?? 'debug'];
    const entries = perStream
      .flat()
      .filter((entry) => LEVEL_RANK[entry.level] >= minimum)
      .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    return entries.slice(-query.limit);
  }

  async metrics(agentId: string): Promise<ReplicaMetrics[]> {
    const held = this.jobs.get(agentId);
    if (!held) return [];
    const running = (await this.api.allocations(jobId(agentId))).filter((a) => a.DesiredStatus === 'run' && a.ClientStatus === 'running');
    const rows = await Promise.all(
      running.map(async (allocation) => {
        try {
          return metricsFrom(allocation.ID, await this.api.stats(allocation.ID), held.spec.memoryMb);
        } catch {
          return null; // stopped between the listing and the read
        }
      }),
    );
    return rows.filter((row): row is ReplicaMetrics => row !== null);
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    await this.queue.catch(() => undefined);
    await Promise.all([...this.jobs.values()].map((held) => held.watch.stop()));
  }

  /** Runs `work` after everything queued before it; its failure goes to its caller and never breaks the queue. */
  private serial<T>(work: () => Promise<T>): Promise<T> {
    const run = this.queue.then(work);
    this.queue = run.catch((error) => {
      if (!this.closed) this.logger.error({ err: error }, 'nomad driver step failed');
    });
    return run;
  }

  /** The held job of the spec's agent, created with its Consul watch when new. */
  private hold(spec: JobSpec): HeldJob {
    const existing = this.jobs.get(spec.agentId);
    if (existing) return existing;
    const held: HeldJob = {
      spec,
      events: [],
      pullFailures: new Map(),
      versions: new Map(),
      fingerprint: '',
      allocations: [],
      watch: new ConsulHealthWatch(
        this.consul,
        serviceName(spec.agentId),
        { waitSeconds: this.settings.consulWaitSeconds, backoffMs: 500, maxBackoffMs: 30_000 },
        (_passing: PassingInstances) => this.notify(spec.agentId),
        this.logger.child({ agent_id: spec.agentId }),
      ),
    };
    this.jobs.set(spec.agentId, held);
    held.watch.start();
    return held;
  }

  /** Secrets first (the template would block without them), then the job; an old Variable goes when nothing is secret any more. */
  private async register(spec: JobSpec, { setCount = false } = {}): Promise<void> {
    const hasSecrets = Object.keys(spec.secretEnv).length > 0;
    await writeSecrets(this.nomad, spec.agentId, spec.secretEnv, this.settings.namespace);
    // With auto-scaling on, the autoscaler owns the count: a redeploy keeps it. A scale
    // that falls back to registering must set it, whatever the autoscaler did.
    await this.api.register(nomadJobFor(spec, this.settings), spec.scaling.enabled && !setCount);
    if (!hasSecrets) await deleteSecrets(this.nomad, spec.agentId, this.settings.namespace);
    await this.learnVersion(spec.agentId);
  }

  private async learnVersion(agentId: string): Promise<void> {
    const held = this.jobs.get(agentId);
    const job = await this.api.read(jobId(agentId));
    if (held && job) this.remember(held, job);
  }

  private remember(held: HeldJob, job: NomadJobRead): void {
    const version = Number(job.Meta?.agent_version);
    if (Number.isInteger(version)) held.versions.set(job.Version, version);
  }

  private async removeJob(agentId: string): Promise<void> {
    await this.api.deregister(jobId(agentId));
    await deleteSecrets(this.nomad, agentId, this.settings.namespace);
    await this.release(agentId);
  }

  private async release(agentId: string): Promise<void> {
    const held = this.jobs.get(agentId);
    this.jobs.delete(agentId);
    await held?.watch.stop();
  }

  private statusFrom(held: HeldJob, allocations: AllocationListStub[]): JobStatus {
    const known = [...held.versions.entries()].sort((a, b) => a[0] - b[0]);
    // Our version of a Nomad version: Meta changes only when we register, so a version we
    // did not read (the autoscaler's count changes) has the Meta of the last one before it.
    const versions = new Map<number, number>();
    for (const allocation of allocations) {
      const before = known.filter(([nomadVersion]) => nomadVersion <= allocation.JobVersion).pop();
      if (before) versions.set(allocation.JobVersion, before[1]);
    }
    const replicas = replicasFrom({
      allocations,
      passing: held.watch.passing,
      pullFailures: held.pullFailures,
      versions,
      fallbackVersion: held.spec.version,
      image: held.spec.image,
      restartBudget: this.settings.restartBudget,
    });
    const events = [...held.events, ...eventsFrom(allocations)].sort((a, b) => a.at.getTime() - b.at.getTime()).slice(-KEPT_EVENTS);
    return { agentId: held.spec.agentId, version: held.spec.version, count: held.spec.count, replicas, events };
  }

  /** Reads every held job's allocations and tells the listeners about those that changed. */
  private async poll(): Promise<void> {
    if (this.polling || this.closed) return;
    this.polling = true;
    try {
      await Promise.all(
        [...this.jobs.values()].map(async (held) => {
          const status = this.statusFrom(held, await this.readAllocations(held));
          const fingerprint = status.replicas.map((r) => `${r.id}:${r.state}:${r.address}:${r.restarts}:${r.version}`).join('|');
          if (fingerprint !== held.fingerprint) {
            held.fingerprint = fingerprint;
            this.notify(held.spec.agentId);
          }
        }),
      );
    } finally {
      this.polling = false;
    }
  }

  private event(agentId: string, type: string, message: string): void {
    const held = this.jobs.get(agentId);
    if (!held) return;
    held.events.push({ at: this.clock.now(), replicaId: null, type, message });
    if (held.events.length > KEPT_EVENTS) held.events.splice(0, held.events.length - KEPT_EVENTS);
    this.logger.info({ agent_id: agentId, event: type }, message);
  }

  private notify(agentId: string): void {
    for (const listener of this.listeners) listener(agentId);
  }
}
