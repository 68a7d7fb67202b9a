import type { Clock } from '../../../contract/clock.js';
import { randomBase62 } from '../../crypto/tokens.js';
import type { JobSpec } from '../../domain/job.js';
import type { SerialQueue } from '../serial-queue.js';
import type { AgentNetworks } from './agent-networks.js';
import type { PodmanCli } from './cli.js';
import type { AgentContainers, ContainerInfo } from './containers.js';
import type { ContainerDeath } from './container-deaths.js';
import { ImagePulls } from './image-pulls.js';
import { opens } from './isolation.js';
import type { JobTable, PodmanJob } from './job-table.js';
import {
  adoptedReplica,
  creating,
  died,
  failed,
  fingerprint,
  imageStep,
  isSettled,
  launched,
  newReplica,
  observe,
  plan,
  restarted,
  specOfVersion,
  stableBeside,
  stopping,
  type ReplicaRecord,
  type Sighting,
} from './replica-state.js';
import { LABEL } from './run-args.js';
import type { PodmanSettings } from './settings.js';

export interface SupervisorParts {
  jobs: JobTable;
  containers: AgentContainers;
  networks: AgentNetworks;
  /** The driver's queue: every tick runs in it, so ticks and API calls never act on a replica at the same time. */
  queue: SerialQueue;
  cli: PodmanCli;
  settings: PodmanSettings;
  clock: Clock;
}

/**
 * Keeps the containers as the jobs ask: each tick (every PODMAN_POLL_INTERVAL_MS, and after
 * each change) lists the containers, adopts those of known agents, removes those no job
 * claims (nor the last reconcile kept, see JobTable.wantOnly), and converges each job as
 * the replica state machine (replica-state.ts) decides.
 * Listeners hear of every agent whose replicas changed.
 */
/**
 * While a replica starts, it is looked at this often rather than every
 * PODMAN_POLL_INTERVAL_MS, so it is routable within this of opening its port: a parked
 * agent's wake waits on exactly this (issue 19, docs/autoscaling.md). Once its address is
 * known a look is a TCP connect, not a `podman ps`; a tick follows only when a port opens.
 */
const STARTING_POLL_MS = 50;
/** Only for a replica this young: one slow to open its port is looked at on the normal interval after. */
const STARTING_POLL_WINDOW_MS = 15_000;

export class Supervisor {
  private readonly listeners: ((agentId: string) => void)[] = [];
  private readonly pulls: ImagePulls;
  private timer: NodeJS.Timeout | undefined;
  /** The quick look scheduled while a replica starts, if any. */
  private soon: NodeJS.Timeout | undefined;
  /** Until the first reconcile, containers without a job may belong to agents not yet loaded: keep them. */
  private adopting = true;
  private closed = false;

  constructor(private readonly parts: SupervisorParts) {
    // Pulls run outside the queue; the tick after one ends starts (or fails) the replicas waiting for it.
    this.pulls = new ImagePulls(parts.cli, parts.settings, () => void parts.queue.run(() => this.tick()), (image) =>
      parts.jobs.all().some((job) => specsOf(job).some((spec) => spec.image === image && spec.registryAuth !== undefined)));
  }

  start(): void {
    this.timer = setInterval(() => void this.parts.queue.run(() => this.tick()), this.parts.settings.pollIntervalMs);
  }

  stop(): void {
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    clearTimeout(this.soon);
  }

  onChange(listener: (agentId: string) => void): void {
    this.listeners.push(listener);
  }

  /**
   * One tick: every container and job looked at once. Listeners hear of the agents whose
   * replicas changed, and of `asked` whatever happened: the agents a submit or scale was
   * for, which the platform refreshes only when told.
   */
  async tick(asked: string[] = []): Promise<void> {
    if (this.closed) return;
    const containers = await this.parts.containers.list();
    this.parts.containers.keepTokensFresh(containers, { removeOthers: !this.adopting });
    const byReplica = new Map(containers.map((c) => [c.Names[0]!, c]));
    const changed = new Set<string>(asked);
    const strays = containers
      .filter((container) => !this.adopt(container, changed) && !this.parts.jobs.claims(container.Labels?.[LABEL.agentId] ?? ''))
      .map((c) => c.Names[0]!);
    if (!this.adopting) await this.parts.containers.remove(strays);
    await Promise.all(this.parts.jobs.all().map((job) => this.converge(job, byReplica, changed)));
    this.notify([...changed]);
    this.lookSoonWhileStarting();
  }

  private lookSoonWhileStarting(): void {
    if (this.closed || this.soon) return;
    const youngSince = this.parts.clock.now().getTime() - STARTING_POLL_WINDOW_MS;
    const starting = this.parts.jobs.all().flatMap((job) => [...job.replicas.values()])
      .filter((r) => r.state === 'starting' && !r.busy && r.startedAt !== null && r.startedAt.getTime() > youngSince);
    if (starting.length === 0) return;
    this.soon = setTimeout(() => {
      this.soon = undefined;
      void this.parts.queue.run(async () => {
        // A replica whose address is not known yet needs podman's view; the others only their port.
        const addresses = starting.map((r) => splitAddress(r.address));
        const ready = addresses.some(([host]) => host === null) || (await Promise.all(addresses.map(([host, port]) => opens(host!, port, STARTING_POLL_MS)))).some(Boolean);
        if (ready) await this.tick();
        else this.lookSoonWhileStarting();
      });
    }, STARTING_POLL_MS);
  }

  /** Once the jobs are all known: a tick that removes the containers no job claims, then their networks. */
  async sweep(): Promise<void> {
    this.adopting = false;
    await this.tick();
    await this.parts.networks.removeStrays((agentId) => this.parts.jobs.claims(agentId));
  }

  /** Tells the listeners of an agent a call was for, when it changed nothing to tick for (a scale of a job not held). */
  told(agentId: string): void {
    this.notify([agentId]);
  }

  /** An agent's containers and network go now, not at the next tick. */
  async removeAgent(agentId: string): Promise<void> {
    const containers = await this.parts.containers.list(agentId);
    await this.parts.containers.remove(containers.map((c) => c.Names[0]!));
    await this.parts.networks.remove(agentId);
    this.notify([agentId]);
  }

  /**
   * A replica's container died (container-deaths.ts): it leaves routing now, listeners hear
   * of it at once, and a tick follows to count the exit and restart it.
   */
  containerDied(death: ContainerDeath): void {
    if (this.closed) return;
    for (const job of this.parts.jobs.all()) {
      const record = job.replicas.get(death.name);
      if (record && died(record, death.at)) this.notify([job.spec.agentId]);
    }
    void this.parts.queue.run(() => this.tick());
  }

  /** Claims a container for its agent's job (adopting it if no record knows it); false when no job wants it. */
  private adopt(container: ContainerInfo, changed: Set<string>): boolean {
    const labels = container.Labels ?? {};
    const replicaId = container.Names[0]!;
    const job = this.parts.jobs.get(labels[LABEL.agentId] ?? '');
    if (!job) return false;
    if (job.replicas.has(replicaId)) return true;
    const found = { id: replicaId, state: container.State, version: Number(labels[LABEL.version] ?? 0) };
    // A stable replica beside a canary keeps the stable's spec: a restart may create its container again.
    const { record, event } = adoptedReplica(specOfVersion(job.spec, found.version), found, this.parts.clock.now());
    job.replicas.set(replicaId, record);
    this.parts.jobs.record(job.spec.agentId, event);
    changed.add(job.spec.agentId);
    return true;
  }

  private async converge(job: PodmanJob, containers: Map<string, ContainerInfo>, changed: Set<string>): Promise<void> {
    const before = fingerprint(job);
    await Promise.all([...job.replicas.values()].filter((r) => !r.busy).map((record) => this.observe(job, record, containers.get(record.id))));
    const next = plan(job);
    const stable = stableBeside(job.spec);
    if (next.crashedStable.length > 0) await this.retire(job, next.crashedStable, `crashed past its restart budget beside the canary: replaced by a new replica of version ${stable?.version}`);
    await this.launchAll(job, job.spec, next.launch, true);
    if (stable) await this.launchAll(job, stable, next.launchStable, false);
    if (next.surplus.length > 0) await this.retire(job, next.surplus, 'scaled down');
    if (next.aborted.length > 0) await this.retire(job, next.aborted, `canary aborted: version ${job.spec.version} serves alone`);
    if (next.replaced.length > 0) await this.retire(job, next.replaced, `replaced by version ${job.spec.version}`);
    if (fingerprint(job) !== before) changed.add(job.spec.agentId);
  }

  /**
   * Starts `count` replicas of `spec` (the job's, or the stable one beside a canary): image
   * and network once, then the replicas side by side. While the image is being pulled the
   * job waits with no new replicas, and the queue moves on. `reportImage`: the image step
   * is a step of the job's rollout; the stable version's image is no step of the canary.
   */
  private async launchAll(job: PodmanJob, spec: JobSpec, count: number, reportImage: boolean): Promise<void> {
    if (count === 0) return;
    const image = await this.pulls.state(spec);
    if (reportImage && job.imageReportedFor !== spec.version) {
      job.imageReportedFor = spec.version;
      this.parts.jobs.record(spec.agentId, imageStep(spec, image.ready));
    }
    if (!image.ready && !image.error) return;
    const prepared = image.error ?? (await this.parts.networks.ensure(spec.agentId).then(() => null, (error: unknown) => describe(error)));
    await Promise.all(Array.from({ length: count }, () => this.launch(job, spec, prepared)));
  }

  /** Looks at the replica's container (its address, whether its port opens) and applies what was seen. */
  private async observe(job: PodmanJob, record: ReplicaRecord, container: ContainerInfo | undefined): Promise<void> {
    if (isSettled(record)) return;
    const now = this.parts.clock.now().getTime();
    let sighting: Sighting;
    if (container?.State === 'running') {
      // No port is published: the edge reaches the replica at its address on the agent's network.
      if (record.addressOf !== container.StartedAt) {
        const ip = await this.parts.containers.addressOf(record.id, record.spec.agentId);
        record.address = ip ? `${ip}:${record.spec.port}` : null;
        record.addressOf = ip ? container.StartedAt : null;
      }
      const [host, port] = splitAddress(record.address);
      sighting = { container: 'running', portOpen: record.state !== 'running' && host ? await opens(host, port) : false };
    } else {
      sighting = container ? { container: 'exited', exitCode: container.ExitCode } : { container: 'missing' };
    }
    const { next, events } = observe(record, sighting, now, this.parts.settings);
    for (const event of events) this.parts.jobs.record(job.spec.agentId, event);
    if (next.restart) await this.restart(job, record, next.containerExists);
  }

  private async restart(job: PodmanJob, record: ReplicaRecord, containerExists: boolean): Promise<void> {
    record.busy = true;
    try {
      await this.parts.networks.secure(record.spec.agentId);
      if (containerExists) await this.parts.containers.start(record.id);
      else await this.parts.containers.run(record.id, record.spec);
      restarted(record, this.parts.clock.now());
    } catch (error) {
      this.parts.jobs.record(job.spec.agentId, failed(record, describe(error)));
    } finally {
      record.busy = false;
    }
  }

  /** Starts one replica of `spec`; `preparationError` (image or network) fails it without trying. */
  private async launch(job: PodmanJob, spec: JobSpec, preparationError: string | null): Promise<void> {
    const record = newReplica(`${spec.agentId}-${randomBase62(6).toLowerCase()}`, spec);
    job.replicas.set(record.id, record);
    try {
      if (preparationError) throw new Error(preparationError);
      this.parts.jobs.record(spec.agentId, creating(record));
      // A fresh random name: no container of it to discard first.
      await this.parts.containers.run(record.id, spec, { fresh: true });
      this.parts.jobs.record(spec.agentId, launched(record, this.parts.clock.now()));
    } catch (error) {
      this.parts.jobs.record(spec.agentId, failed(record, describe(error)));
      await this.parts.containers.discard(record.id);
    } finally {
      record.busy = false;
    }
  }

  /** Out of routing first; a replica that was routed gets the drain period before its container stops. */
  private async retire(job: PodmanJob, records: ReplicaRecord[], why: string): Promise<void> {
    const { drain, events } = stopping(records, why);
    for (const event of events) this.parts.jobs.record(job.spec.agentId, event);
    if (drain && this.parts.settings.drainMs > 0) {
      this.notify([job.spec.agentId]);
      await new Promise((resolve) => setTimeout(resolve, this.parts.settings.drainMs));
    }
    await this.parts.containers.remove(records.map((r) => r.id));
    for (const record of records) job.replicas.delete(record.id);
  }

  private notify(agentIds: string[]): void {
    for (const agentId of agentIds) for (const listener of this.listeners) listener(agentId);
  }
}

/** What a job runs: its spec, and the stable one beside a canary. */
const specsOf = (job: PodmanJob): JobSpec[] => [job.spec, ...(job.spec.stable ? [job.spec.stable] : [])];

const describe = (error: unknown) => (error instanceof Error ? error.message : String(error));

/** `ip:port` → [ip, port]; [null, 0] for no address. */
function splitAddress(address: string | null): [string | null, number] {
  if (!address) return [null, 0];
  const colon = address.lastIndexOf(':');
  return [address.slice(0, colon), Number(address.slice(colon + 1))];
}
