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
  type ReplicaEvent,
  type ReplicaRecord,
  type Sighting,
} from './replica-state.js';
import { adoptsAsParked, cooledEvent, parkedEvent, parkingStep, resumedEvent, takenBackEvent, type ParkedReplica } from './parking.js';
import { LABEL } from './run-args.js';
import type { SecretScratch } from './secret-scratch.js';
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
  /** Where a pull's registry auth file is written (secret-scratch.ts). */
  secrets: SecretScratch;
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
 * known a look is a TCP connect, not a `podman ps`; an open port routes the replica at once,
 * and a tick follows to confirm it.
 */
const STARTING_POLL_MS = 25;
/** Only for a replica this young: one slow to open its port is looked at on the normal interval after. */
const STARTING_POLL_WINDOW_MS = 15_000;

export class Supervisor {
  private readonly listeners: ((agentId: string) => void)[] = [];
  private readonly pulls: ImagePulls;
  private timer: NodeJS.Timeout | undefined;
  /** The quick look scheduled while a replica starts, if any. */
  private soon: NodeJS.Timeout | undefined;
  /** Drain periods and stops under way outside the queue (retire, keepParked, remountTokens, removeOutsideQueue); a close waits for them. */
  private readonly outside = new Set<Promise<void>>();
  /** Containers being removed outside the queue, by replica id, with their agent's id: no tick adopts them or takes them for strays. */
  private readonly leaving = new Map<string, string>();
  /** Removals of strays under way: a sweep resolves once they are done. */
  private readonly strayRemovals = new Set<Promise<void>>();
  /** Until the first reconcile, containers without a job may belong to agents not yet loaded: keep them. */
  private adopting = true;
  private closed = false;

  constructor(private readonly parts: SupervisorParts) {
    // Pulls run outside the queue; the tick after one ends starts (or fails) the replicas waiting for it.
    this.pulls = new ImagePulls(parts.cli, parts.settings, () => void parts.queue.run(() => this.tick()), (image) =>
      parts.jobs.all().some((job) => specsOf(job).some((spec) => spec.image === image && spec.registryAuth !== undefined)), parts.secrets);
  }

  start(): void {
    this.timer = setInterval(() => void this.parts.queue.run(() => this.tick()), this.parts.settings.pollIntervalMs);
  }

  stop(): void {
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    clearTimeout(this.soon);
  }

  /** Once stopped: waits for the drains and stops under way outside the queue, and what they apply in it. */
  async settled(): Promise<void> {
    while (this.outside.size > 0) await Promise.all(this.outside);
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
    this.parts.containers.keepTokensFresh(containers, { removeOthers: !this.adopting, leaving: this.leavingReplicas() });
    const byReplica = new Map(containers.map((c) => [c.Names[0]!, c]));
    const changed = new Set<string>(asked);
    const strays = containers
      .filter((container) => !this.leaving.has(container.Names[0]!) && !this.adopt(container, changed) && !this.parts.jobs.claims(container.Labels?.[LABEL.agentId] ?? ''))
      .map(leavingReplica);
    if (!this.adopting && strays.length > 0) this.removeStrays(strays);
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
      void this.lookAtStarting(starting);
    }, STARTING_POLL_MS);
  }

  /**
   * One look at starting replicas. The connects run outside the queue, so a tick under way
   * (a `podman ps` every PODMAN_POLL_INTERVAL_MS) does not hold them back; what they found
   * is applied in the queue. A replica whose address is not known yet needs podman's view
   * (a tick); the others only their port.
   */
  private async lookAtStarting(starting: ReplicaRecord[]): Promise<void> {
    const looks = await Promise.all(starting.map(async (record) => {
      const [host, port] = splitAddress(record.address);
      return { record, known: host !== null, open: host !== null && (await opens(host, port, STARTING_POLL_MS)) };
    }));
    await this.parts.queue.run(async () => {
      // An open port is what the tick would route it for: routed now, one `podman ps` sooner, and the tick confirms it.
      for (const { record } of looks.filter((look) => look.open)) this.routeListening(record);
      if (looks.some((look) => !look.known || look.open)) await this.tick();
      else this.lookSoonWhileStarting();
    });
  }

  /** A starting replica whose port opened: ready, as observe decides for a running container with an open port, and listeners told. */
  private routeListening(record: ReplicaRecord): void {
    const job = this.parts.jobs.get(record.spec.agentId);
    if (!job || job.replicas.get(record.id) !== record || record.state !== 'starting' || record.busy) return;
    const { events } = observe(record, { container: 'running', portOpen: true }, this.parts.clock.now().getTime(), this.parts.settings);
    for (const event of events) this.parts.jobs.record(job.spec.agentId, event);
    this.notify([job.spec.agentId]);
  }

  /**
   * Once the jobs are all known: a tick that removes the containers no job claims, then
   * their networks. `gone` settles once the removals of strays under way are done; the call
   * itself returns once they left the queue's hands.
   */
  async sweep(): Promise<{ gone: Promise<void> }> {
    this.adopting = false;
    await this.tick();
    // A network whose containers are being removed goes after them (removeOutsideQueue).
    await this.parts.networks.removeStrays((agentId) => this.parts.jobs.claims(agentId) || [...this.leaving.values()].includes(agentId));
    return { gone: Promise.all([...this.strayRemovals]).then(() => undefined) };
  }

  /** Containers no job claims go outside the queue, with their agents' networks: no job claims those agents either. */
  private removeStrays(strays: LeavingReplica[]): void {
    const removal = this.removeOutsideQueue(strays, { networksOf: strays.map((r) => r.agentId) });
    this.strayRemovals.add(removal);
    void removal.finally(() => this.strayRemovals.delete(removal));
  }

  /**
   * A wake's short way, for a scale to 1 of a parked job: its parked replica thawed (or
   * started, its address read) without the tick's `podman ps`, and listeners told at once, so
   * a thawed replica is routed one podman call after the scale and a started one is probed
   * from its start. False when there was nothing to resume: the caller ticks as for any scale.
   * The periodic tick then sees the replica as any other.
   */
  async resumeParked(agentId: string): Promise<boolean> {
    const job = this.parts.jobs.get(agentId);
    if (!job?.parked || this.closed || job.spec.count !== 1 || parkingStep(job, this.parts.clock.now().getTime()).step !== 'resume') return false;
    const resumed = await this.keepParked(job);
    if (!resumed) return false;
    if (resumed.state === 'starting') {
      const ip = await this.addressOf(resumed);
      resumed.address = ip ? `${ip}:${resumed.spec.port}` : null;
    }
    this.notify([agentId]);
    this.lookSoonWhileStarting();
    return true;
  }

  /**
   * A scale's step: the job converged on what its records know, without the tick's `podman
   * ps` of every container. A listing observes, and a scale needs none: it only plans (start
   * or retire replicas, park or discard), and the periodic tick observes what the step
   * changed. Every other agent's step waits for this one, a wake's included: a listing here
   * was most of its time. Until the first sweep, containers of known agents may not be
   * adopted yet, and a plan blind to them would start their replicas twice: a tick then.
   */
  async converged(agentId: string): Promise<void> {
    const job = this.parts.jobs.get(agentId);
    if (this.adopting || this.closed || !job) return this.tick([agentId]);
    await this.converge(job, null, new Set());
    this.notify([agentId]);
    this.lookSoonWhileStarting();
  }

  /** Tells the listeners of an agent a call was for, when it changed nothing to tick for (a scale of a job not held). */
  told(agentId: string): void {
    this.notify([agentId]);
  }

  /**
   * A deleted agent's containers, then its network, go now, not at the next tick: outside the
   * queue, as any removal (removeOutsideQueue). `gone` settles once they have; the call
   * itself returns as soon as they left the queue's hands.
   */
  async removeAgent(agentId: string): Promise<{ gone: Promise<void> }> {
    const containers = await this.parts.containers.list(agentId);
    return { gone: this.removeOutsideQueue(containers.map(leavingReplica), { networksOf: [agentId] }) };
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
    if (job.replicas.has(replicaId) || job.parked?.record.id === replicaId) return true;
    const found = { id: replicaId, state: container.State, version: Number(labels[LABEL.version] ?? 0) };
    // A stable replica beside a canary keeps the stable's spec: a restart may create its container again.
    const { record, event } = adoptedReplica(specOfVersion(job.spec, found.version), found, this.parts.clock.now());
    const parkedMode = adoptsAsParked(job, found);
    if (parkedMode) {
      // Running as far as its state goes: a thaw routes it once a look has read its address.
      record.state = 'running';
      job.parked = { record, mode: parkedMode, draining: false, stopping: false };
      this.parts.jobs.record(job.spec.agentId, { ...event, message: `${event.message}: the agent's parked replica (${parkedMode})` });
      return true;
    }
    job.replicas.set(replicaId, record);
    this.parts.jobs.record(job.spec.agentId, event);
    changed.add(job.spec.agentId);
    return true;
  }

  /** The job's step of a tick; `containers`, the tick's listing, observes its replicas first (none: a scale's, which only plans). */
  private async converge(job: PodmanJob, containers: Map<string, ContainerInfo> | null, changed: Set<string>): Promise<void> {
    const before = fingerprint(job);
    // A replica resumed now is not looked at in this tick's listing, taken before it ran again.
    const resumed = await this.keepParked(job);
    if (containers) await Promise.all([...job.replicas.values()].filter((r) => !r.busy && r !== resumed).map((record) => this.observe(job, record, containers.get(record.id))));
    const next = plan(job);
    const stable = stableBeside(job.spec);
    if (next.crashedStable.length > 0) this.retire(job, next.crashedStable, `crashed past its restart budget beside the canary: replaced by a new replica of version ${stable?.version}`);
    // While a parked replica stops, a wake is for it, and a redeploy waits for its removal: nothing starts until it has stopped (stopParked).
    const parkedStopping = job.parked?.stopping === true;
    await this.launchAll(job, job.spec, parkedStopping ? 0 : next.launch, true);
    if (stable) await this.launchAll(job, stable, parkedStopping ? 0 : next.launchStable, false);
    if (next.surplus.length > 0) this.retire(job, next.surplus, 'scaled down');
    if (next.aborted.length > 0) this.retire(job, next.aborted, `canary aborted: version ${job.spec.version} serves alone`);
    if (next.replaced.length > 0) this.retire(job, next.replaced, `replaced by version ${job.spec.version}`);
    if (fingerprint(job) !== before) changed.add(job.spec.agentId);
  }

  /**
   * The job's parked replica, as parking.ts decides: parked (out of routing, then frozen or
   * stopped), cooled (a frozen one stopped at its warm period's end), resumed for a wake, or
   * discarded. Returns the replica resumed, if one was. Whatever podman refuses ends the
   * parking: the container is removed and the plan starts a fresh replica when one is asked.
   */
  private async keepParked(job: PodmanJob): Promise<ReplicaRecord | null> {
    const now = this.parts.clock.now();
    const step = parkingStep(job, now.getTime());
    if (step.step === 'none') return null;
    const { containers, jobs } = this.parts;
    const agentId = job.spec.agentId;
    if (step.step === 'park') {
      const { record, mode } = step;
      // Out of routing first, and the drain period for a request already on its way, as any
      // retirement: outside the queue, so other agents' steps (their wakes) do not wait for it.
      const parking: ParkedReplica = { record, mode, draining: true, stopping: false };
      job.replicas.delete(record.id);
      job.parked = parking;
      record.busy = true;
      this.notify([agentId]);
      this.outsideQueue(() => this.drain(), async () => {
        // A wake, a redeploy or the agent's removal during the drain took it: nothing to freeze or stop.
        if (jobs.get(agentId) !== job || job.parked !== parking) return;
        parking.draining = false;
        // A freeze takes no signal and is quick: in the queue. A stop waits for the process to end: beside it.
        if (mode === 'warm') await this.parkingCall(job, record, () => containers.pause(record.id), () => parkedEvent(record, mode, job.spec.parked?.warmUntil ?? null));
        else this.stopParked(job, parking, { frozen: false }, () => parkedEvent(record, mode, null));
      });
      return null;
    }
    const parked = job.parked!;
    const { record } = parked;
    // A wake or a discard during its stop is done once it has stopped (stopParked): never on a container half stopped.
    if (parked.stopping) return null;
    if (step.step === 'discard') {
      job.parked = null;
      void this.removeOutsideQueue([{ id: record.id, agentId, frozen: parked.mode === 'warm' && !parked.draining }]);
      return null;
    }
    if (step.step === 'cool') {
      parked.mode = 'cold';
      this.stopParked(job, parked, { frozen: true }, () => cooledEvent(record));
      return null;
    }
    job.parked = null;
    if (parked.draining) {
      // Still running as it was when it left routing: routed again as it is.
      record.busy = false;
      job.replicas.set(record.id, record);
      jobs.record(agentId, takenBackEvent(record));
      return record;
    }
    const resumed = await this.parkingCall(job, record, async () => {
      if (parked.mode === 'warm') {
        // Its processes, sockets and network never changed: routable as soon as they run.
        await containers.unpause(record.id);
      } else {
        await this.parts.networks.secure(agentId);
        await containers.start(record.id);
        restarted(record, now);
        record.address = null;
        record.addressOf = null;
      }
    }, () => resumedEvent(record, parked.mode));
    if (resumed) job.replicas.set(record.id, record);
    return resumed;
  }

  /**
   * Stops a parked replica beside the queue, thawed first if `frozen` (a frozen container
   * takes no signal): a stop waits up to STOP_TIMEOUT_SECONDS for the process to end (all of
   * it for a PID 1 with no SIGTERM handler, which ignores the signal), and in the queue it held
   * every other agent's steps, wakes included, for as long. It stays the job's parked replica
   * meanwhile, `stopping`: no tick adopts it, and what the job asked meanwhile (a wake, a
   * redeploy's discard) is done by a tick once it has stopped. On failure its container goes
   * and the job is parked no more, as for any parking call.
   */
  private stopParked(job: PodmanJob, parking: ParkedReplica, { frozen }: { frozen: boolean }, event: () => ReplicaEvent): void {
    const { containers, jobs } = this.parts;
    const { record } = parking;
    const agentId = job.spec.agentId;
    parking.stopping = true;
    record.busy = true;
    let failure: unknown = null;
    this.outsideQueue(async () => {
      try {
        if (frozen) await containers.unpause(record.id);
        await containers.stop(record.id);
      } catch (error) {
        failure = error;
      }
    }, async () => {
      parking.stopping = false;
      record.busy = false;
      // The agent was removed meanwhile, and the container with it.
      if (jobs.get(agentId) !== job || job.parked !== parking) return;
      if (failure) {
        jobs.record(agentId, { replicaId: record.id, type: 'park_failed', message: `${describe(failure)}: removed; a wake starts a fresh replica` });
        job.parked = null;
        void this.removeOutsideQueue([{ id: record.id, agentId, frozen: false }]);
      } else {
        jobs.record(agentId, event());
      }
      if (failure || parkingStep(job, this.parts.clock.now().getTime()).step !== 'none') await this.tick([agentId]);
    });
  }

  /** One podman call of parking for the parked replica; on failure its container goes and the job is parked no more. */
  private async parkingCall(job: PodmanJob, record: ReplicaRecord, call: () => Promise<void>, event: () => ReplicaEvent): Promise<ReplicaRecord | null> {
    record.busy = true;
    try {
      await call();
      this.parts.jobs.record(job.spec.agentId, event());
      return record;
    } catch (error) {
      this.parts.jobs.record(job.spec.agentId, { replicaId: record.id, type: 'park_failed', message: `${describe(error)}: removed; a wake starts a fresh replica` });
      if (job.parked?.record === record) job.parked = null;
      void this.removeOutsideQueue([{ id: record.id, agentId: job.spec.agentId, frozen: false }]);
      return null;
    } finally {
      record.busy = false;
    }
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
        const { ip, mountsItsTokens } = await this.inspectStarted(record);
        if (mountsItsTokens === false) return this.remountTokens(job, record);
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

  /**
   * The replica's address on its agent's network, read once per start of its container; its
   * network's bridge then has a port, and its MAC address is pinned (agent-networks.ts) before
   * any replica on it can be removed.
   */
  private async addressOf(record: ReplicaRecord): Promise<string | null> {
    return (await this.inspectStarted(record)).ip;
  }

  private async inspectStarted(record: ReplicaRecord): Promise<{ ip: string | null; mountsItsTokens: boolean | null }> {
    const seen = await this.parts.containers.inspectStarted(record.id, record.spec.agentId);
    if (seen.ip) await this.parts.networks.pinBridgeOf(seen.ip);
    return seen;
  }

  /**
   * A running replica that does not mount the token directory this driver writes (an adopted
   * one, started by a control API that saw another directory at PODMAN_STATE_DIR's path) is
   * restarted: podman mounts the path anew from where this process sees it. Left alone, it
   * would keep its last token and fail every session call once that expired. It leaves
   * routing first, and is routed again once it proves ready, as after any restart.
   * The restart runs beside the queue, as any stop: it waits up to STOP_TIMEOUT_SECONDS for
   * the process to end, and in the queue held every other agent's steps, wakes included, for
   * as long. Meanwhile the replica is busy, so no look, start or parking takes it; a
   * retirement (a scale down, a redeploy) or its agent's removal still may, and then its
   * removal has the container, and the restart's end changes nothing.
   */
  private remountTokens(job: PodmanJob, record: ReplicaRecord): void {
    const { containers, jobs } = this.parts;
    const agentId = job.spec.agentId;
    record.busy = true;
    jobs.record(agentId, {
      replicaId: record.id,
      type: 'restarting',
      message: 'its container mounts a token directory other than the one this control API writes (PODMAN_STATE_DIR): restarting it to mount the current one',
    });
    if (record.address !== null) {
      record.address = null;
      this.notify([agentId]);
    }
    let failure: unknown = null;
    this.outsideQueue(async () => {
      try {
        await containers.restart(record.id);
      } catch (error) {
        failure = error;
      }
    }, async () => {
      record.busy = false;
      if (jobs.get(agentId) !== job || job.replicas.get(record.id) !== record || record.state === 'stopping') return;
      if (failure) {
        jobs.record(agentId, failed(record, describe(failure)));
      } else {
        restarted(record, this.parts.clock.now());
        record.addressOf = null;
      }
      this.notify([agentId]);
      this.lookSoonWhileStarting();
    });
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

  /**
   * Out of routing at once; a replica that was routed gets the drain period before its
   * container stops. The drain and the stop (up to STOP_TIMEOUT_SECONDS) run outside the
   * queue: in it, each retirement held every other agent's steps behind it, wakes included.
   * Meanwhile the records stay, `stopping`, which no look and no plan counts.
   */
  private retire(job: PodmanJob, records: ReplicaRecord[], why: string): void {
    const agentId = job.spec.agentId;
    const { drain, events } = stopping(records, why);
    for (const event of events) this.parts.jobs.record(agentId, event);
    if (drain) this.notify([agentId]);
    this.outsideQueue(async () => {
      if (drain) await this.drain();
      await this.parts.containers.remove(records.map((r) => r.id));
    }, async () => {
      for (const record of records) if (job.replicas.get(record.id) === record) job.replicas.delete(record.id);
      this.notify([agentId]);
    });
  }

  /**
   * Removes containers no job wants any more (a deleted agent's, strays, a parked replica
   * discarded) outside the queue: each `podman rm` waits up to STOP_TIMEOUT_SECONDS for its
   * process to end, and in the queue held every other agent's steps behind it, wakes
   * included. Until they are gone no tick adopts them, takes them for strays or writes their
   * token. A frozen one is thawed first, so that the stop timeout's SIGTERM reaches it. The
   * networks of `networksOf` go after the containers, each unless a job claims its agent
   * again or another removal of its agent's containers is still under way.
   * What podman does meanwhile (containers/podman at c6580b4a52): `(*Container).stop` in
   * libpod/container_internal.go sets ContainerStateStopping and unlocks the container before
   * waiting on it (#8501), so a tick's `podman ps` is not held by a long stop, and a second
   * stop or rm of a stopping container is allowed (its ensureState takes Stopping): a
   * deletion's rm may meet a parked replica's stop. `removeContainer` in libpod/runtime_ctr.go
   * kills a paused container with signal 9 and no stop timeout, hence the thaw first.
   */
  private removeOutsideQueue(replicas: LeavingReplica[], { networksOf = [] }: { networksOf?: string[] } = {}): Promise<void> {
    for (const { id, agentId } of replicas) this.leaving.set(id, agentId);
    const { containers, networks, jobs } = this.parts;
    const agentIds = [...new Set([...replicas.map((r) => r.agentId), ...networksOf])].filter((agentId) => agentId !== '');
    const ours = new Set(replicas.map((r) => r.id));
    return this.outsideQueue(async () => {
      await Promise.all(replicas.filter((r) => r.frozen).map((r) => containers.unpause(r.id).catch(() => undefined)));
      await containers.remove([...ours]);
      const othersLeaving = new Set([...this.leaving].filter(([id]) => !ours.has(id)).map(([, agentId]) => agentId));
      const networksGoing = [...new Set(networksOf)].filter((a) => a !== '' && !jobs.claims(a) && !othersLeaving.has(a));
      for (const agentId of networksGoing) await networks.remove(agentId);
    }, async () => {
      // In the queue: a tick is wholly before this (the containers still left alone) or after (gone from its listing).
      for (const id of ours) this.leaving.delete(id);
      this.notify(agentIds);
    });
  }

  /** Replicas whose removal is under way: those removed outside the queue, and retired ones (`stopping`) in their drain. */
  private leavingReplicas(): Set<string> {
    const ids = new Set(this.leaving.keys());
    for (const job of this.parts.jobs.all()) for (const record of job.replicas.values()) if (record.state === 'stopping') ids.add(record.id);
    return ids;
  }

  /** The drain period (DRAIN_SECONDS) of a replica just out of routing, for a request already on its way. */
  private async drain(): Promise<void> {
    if (this.parts.settings.drainMs > 0) await new Promise((resolve) => setTimeout(resolve, this.parts.settings.drainMs));
  }

  /**
   * `work` now, outside the queue; then `apply`, what it changes of the jobs, in the queue,
   * even when work failed (a network's removal whose firewall change nft refused): what
   * apply releases (`leaving`) would otherwise be held for good. The queue reports either
   * failure, as it does a step's. A close waits for both, and so does the caller who awaits
   * what this returns.
   */
  private outsideQueue(work: () => Promise<void>, apply: () => Promise<void>): Promise<void> {
    const { queue } = this.parts;
    const done: Promise<void> = work()
      .then(
        () => queue.run(apply),
        (error: unknown) => queue.run(async () => {
          await apply();
          throw error;
        }),
      )
      .catch(() => undefined)
      .finally(() => this.outside.delete(done));
    this.outside.add(done);
    return done;
  }

  private notify(agentIds: string[]): void {
    for (const agentId of agentIds) for (const listener of this.listeners) listener(agentId);
  }
}

/** A container whose removal runs outside the queue; `frozen`: paused, to be thawed first. */
interface LeavingReplica {
  id: string;
  agentId: string;
  frozen: boolean;
}

const leavingReplica = (container: ContainerInfo): LeavingReplica => ({
  id: container.Names[0]!,
  agentId: container.Labels?.[LABEL.agentId] ?? '',
  frozen: container.State === 'paused',
});

/** What a job runs: its spec, and the stable one beside a canary. */
const specsOf = (job: PodmanJob): JobSpec[] => [job.spec, ...(job.spec.stable ? [job.spec.stable] : [])];

const describe = (error: unknown) => (error instanceof Error ? error.message : String(error));

/** `ip:port` → [ip, port]; [null, 0] for no address. */
function splitAddress(address: string | null): [string | null, number] {
  if (!address) return [null, 0];
  const colon = address.lastIndexOf(':');
  return [address.slice(0, colon), Number(address.slice(colon + 1))];
}
