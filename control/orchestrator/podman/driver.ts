import { rmdirSync } from 'node:fs';
import type { Logger } from 'pino';
import type { Clock } from '../../../contract/clock.js';
import type { JobSpec, JobStatus, Parking, RolloutProgress } from '../../domain/job.js';
import type { LogEntry } from '../../domain/log-entry.js';
import { selectEntries } from '../log-levels.js';
import { SerialQueue } from '../serial-queue.js';
import type { LogQuery, Orchestrator, ReconcileOptions, ReplicaMetrics } from '../types.js';
import { AgentNetworks } from './agent-networks.js';
import type { PodmanCli } from './cli.js';
import { probeCheckpointRestore, type ColdWake } from './checkpoint-probe.js';
import { ContainerDeaths } from './container-deaths.js';
import { AgentContainers } from './containers.js';
import { PodmanInfo } from './host-info.js';
import type { InstanceHold } from './instance-hold.js';
import { JobTable } from './job-table.js';
import { parseLogOutput } from './log-lines.js';
import type { ProtectedEndpoint } from './protected-endpoints.js';
import { ReplicaTokenFiles, type AgentServicesAccess } from './replica-tokens.js';
import { stableBeside, toReplica } from './replica-state.js';
import { chconForContainers, RootfsLabels } from './rootfs-labels.js';
import { SecretScratch } from './secret-scratch.js';
import type { PodmanSettings } from './settings.js';
import { Supervisor } from './supervisor.js';
import { submittedMessage } from '../submitted-message.js';

/**
 * Runs agents as podman containers on this host and keeps them as asked: a supervisor
 * (supervisor.ts), told at once of each container's death (container-deaths.ts),
 * restarts exited replicas with backoff (then `crashed` past the budget), probes ports to
 * decide when a replica is routable, rolls out new versions health-gated (new replicas up
 * before old ones stop), and removes containers no job claims, each step as the replica
 * state machine (replica-state.ts) decides. Each agent has its own network,
 * fenced and checked before a replica runs there (agent-networks.ts). Every change goes
 * through one queue, so ticks and API calls never act on a replica at the same time. Image
 * pulls, and the drain and stop of a replica no step acts on any more (one leaving, one
 * being parked, a deleted agent's, a stray), run beside it: they may take minutes, and
 * would hold back every agent.
 */
export class PodmanDriver implements Orchestrator {
  readonly name = 'podman';
  /** A parked agent's replica is paused (the cgroup freezer), then stopped at its warm period's end (parked-replicas.ts). */
  readonly warmParking = true;
  private readonly jobs: JobTable;
  private readonly queue: SerialQueue;
  private readonly containers: AgentContainers;
  private readonly networks: AgentNetworks;
  private readonly supervisor: Supervisor;
  private readonly deaths: ContainerDeaths;
  /** The env and auth files handed to podman calls, in the instance's directory (secret-scratch.ts). */
  private readonly secrets: SecretScratch;
  /** Labels both probes' roots where SELinux is on, from one `podman info` shared with the isolation check. */
  private readonly rootfsLabels: RootfsLabels;
  /** The replicas' token directories' parent (AgentServicesAccess.directory), in the instance's directory; null without agent services. */
  private readonly tokenDirectory: string | null;
  /** What the checkpoint probe found at start (sayHowColdWakesWork); null before start. */
  coldWake: Promise<ColdWake> | null = null;

  constructor(
    private readonly cli: PodmanCli,
    private readonly settings: PodmanSettings,
    clock: Clock,
    private readonly logger: Logger,
    /** What agents must not reach besides the metadata service: the platform's own services. */
    protectedEndpoints: ProtectedEndpoint[],
    /**
     * The agent services (issue 37), the one platform endpoint replicas reach: each replica
     * gets their URL and a token file, and the agent networks' firewall lets their port
     * through; null when the platform runs none.
     */
    agentServices: AgentServicesAccess | null = null,
    /** This process's hold on the instance (instance-hold.ts), given back when the driver closes. */
    private readonly hold: InstanceHold | null = null,
  ) {
    this.jobs = new JobTable(clock, logger);
    this.secrets = SecretScratch.in(settings.stateDirectory);
    const hostInfo = new PodmanInfo(cli);
    this.rootfsLabels = new RootfsLabels(hostInfo, chconForContainers(settings.environment));
    this.tokenDirectory = agentServices?.directory ?? null;
    this.queue = new SerialQueue((error) => logger.error({ err: error }, 'podman driver step failed'));
    const tokens = agentServices && { url: agentServices.url, maxSessionBytes: agentServices.maxSessionBytes, tokens: new ReplicaTokenFiles(agentServices, clock, logger) };
    this.containers = new AgentContainers(cli, settings, logger, this.secrets, tokens);
    const fenced = agentServices ? { ...settings, agentHostPorts: [...new Set([...settings.agentHostPorts, agentServices.port])] } : settings;
    this.networks = new AgentNetworks(cli, fenced, protectedEndpoints, logger, hostInfo, this.rootfsLabels, agentServices?.port ?? null);
    this.supervisor = new Supervisor({ jobs: this.jobs, containers: this.containers, networks: this.networks, queue: this.queue, cli, settings, clock, secrets: this.secrets });
    this.deaths = new ContainerDeaths(cli, settings.instance, (death) => this.supervisor.containerDied(death), logger);
  }

  start(): void {
    // What a control API of this instance killed mid-call left: its env and auth files, secrets opened.
    this.secrets.clear();
    // First in the queue: no replica starts before the host's isolation was checked.
    void this.queue.run(() => this.networks.start());
    this.supervisor.start();
    this.deaths.start();
    this.coldWake = this.sayHowColdWakesWork();
  }

  /**
   * Whether podman can checkpoint and restore a container on this host, tried once at start
   * (checkpoint-probe.ts), and what a cold-parked replica's wake does here: always a fresh
   * start of its stopped container in this version. Restoring from a checkpoint taken at
   * first readiness is not built: it could not be proven on the hosts this was built on,
   * where CRIU cannot dump (docs/scaling.md, "Warm and cold parking").
   */
  private async sayHowColdWakesWork(): Promise<ColdWake> {
    const found = await probeCheckpointRestore(this.cli, { busybox: this.settings.probeBusybox, instance: this.settings.instance, stateDirectory: this.settings.stateDirectory, nofileLimit: this.settings.nofileLimit, nprocLimit: this.settings.nprocLimit }, this.rootfsLabels);
    if (found.mode === 'fresh') this.logger.info({ reason: found.reason }, 'podman cannot checkpoint and restore a container on this host: cold-parked replicas wake by a fresh start of their stopped container');
    else this.logger.info('podman can checkpoint and restore a container on this host, yet cold-parked replicas wake by a fresh start of their stopped container: restoring from a checkpoint is not built (docs/scaling.md)');
    return found;
  }

  onChange(listener: (agentId: string) => void): void {
    this.supervisor.onChange(listener);
  }

  /** Each rollout step, from the job's events as they are recorded (rollout-phases.ts). */
  onProgress(listener: (progress: RolloutProgress) => void): void {
    this.jobs.onProgress(listener);
  }

  /**
   * Holds the spec (JobTable.want) and converges at once. A spec with `stable` is a canary:
   * both versions run side by side (replica-state.ts, plan); a later spec of the canary's
   * version without it promotes the canary, the stable spec itself aborts it.
   */
  submit(spec: JobSpec): Promise<void> {
    if (spec.stable && spec.stable.version >= spec.version) {
      return Promise.reject(new Error(`a canary's stable version must be older than the canary: version ${spec.version} beside stable version ${spec.stable.version}`));
    }
    return this.queue.run(async () => {
      this.jobs.want(spec);
      this.jobs.record(spec.agentId, { replicaId: null, type: 'submitted', message: submittedMessage(spec) });
      await this.supervisor.tick([spec.agentId]);
    });
  }

  scale(agentId: string, count: number, parked?: Parking): Promise<void> {
    return this.queue.run(async () => {
      if (!this.jobs.scale(agentId, count, parked)) return this.supervisor.told(agentId);
      this.jobs.record(agentId, { replicaId: null, type: 'scaled', message: `${count} replica(s)` });
      if (!(await this.supervisor.resumeParked(agentId))) await this.supervisor.converged(agentId);
    });
  }

  /** Resolves once the agent's containers and network are gone; the queue moves on meanwhile (Supervisor.removeAgent). */
  async remove(agentId: string): Promise<void> {
    const removal = await this.queue.run(async () => {
      this.jobs.forget(agentId);
      return this.supervisor.removeAgent(agentId);
    });
    await removal.gone;
  }

  /** Resolves once the containers and networks no job claims are gone; the queue moves on meanwhile (Supervisor.sweep). */
  async reconcile(specs: JobSpec[], { keep = [] }: ReconcileOptions = {}): Promise<void> {
    const sweep = await this.queue.run(async () => {
      this.jobs.wantOnly(specs, keep);
      return this.supervisor.sweep();
    });
    await sweep.gone;
  }

  async status(agentId: string): Promise<JobStatus | null> {
    const job = this.jobs.get(agentId);
    if (!job) return null;
    const stable = stableBeside(job.spec);
    return {
      agentId,
      version: job.spec.version,
      count: job.spec.count,
      ...(stable ? { stableVersion: stable.version } : {}),
      replicas: [...job.replicas.values()].map(toReplica),
      events: job.events.list(),
    };
  }

  async logs(agentId: string, query: LogQuery): Promise<LogEntry[]> {
    const containers = await this.containers.list(agentId);
    const replicaIds = containers.map((c) => c.Names[0]!).filter((id) => !query.replicaId || id === query.replicaId);
    const perReplica = await Promise.all(
      replicaIds.map(async (replicaId) => {
        try {
          const { stdout, stderr } = await this.containers.logs(replicaId);
          return [...parseLogOutput(stdout, agentId, replicaId, 'stdout'), ...parseLogOutput(stderr, agentId, replicaId, 'stderr')];
        } catch {
          return []; // removed between the listing and the read
        }
      }),
    );
    return selectEntries(perReplica.flat(), query);
  }

  async metrics(agentId: string): Promise<ReplicaMetrics[]> {
    const job = this.jobs.get(agentId);
    if (!job) return [];
    const running = [...job.replicas.values()].filter((r) => r.state === 'running' || r.state === 'starting');
    if (running.length === 0) return [];
    const rows = await this.containers.stats(running.map((r) => r.id));
    return rows.map((row) => ({
      replicaId: row.Name,
      // Hundredths, as podman's table and this API have always shown it.
      cpuPercent: Math.round(row.CPU * 100) / 100,
      memoryMb: row.MemUsage / (1024 * 1024),
      memoryLimitMb: job.replicas.get(row.Name)?.spec.memoryMb ?? 0,
    }));
  }

  async close(): Promise<void> {
    this.deaths.stop();
    this.supervisor.stop();
    // The checkpoint probe removes its containers and files when it ends: a close during it would leave them.
    await this.coldWake;
    await this.queue.close();
    // Retirements and parkings drain and stop outside the queue; each then applies its end in it.
    await this.supervisor.settled();
    await this.networks.close();
    // A pull still under way (pulls run outside the queue) loses its auth file: the process is stopping.
    this.secrets.clear();
    // With no replica left, nothing of the instance's directory outlives the run: an
    // installation on the earlier default in $TMPDIR moves to the new one at its next start
    // (host.ts, stateDirectoryOf).
    if (this.tokenDirectory) removeIfEmpty(this.tokenDirectory);
    removeIfEmpty(this.settings.stateDirectory);
    await this.hold?.release();
  }
}

/** A directory of the instance's, once nothing in it outlives this run (replicas' token directories would). */
function removeIfEmpty(directory: string): void {
  try {
    rmdirSync(directory);
  } catch {
    // not empty, or not there
  }
}
