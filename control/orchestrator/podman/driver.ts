import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { Clock } from '../../../contract/clock.js';
import { randomBase62 } from '../../crypto/tokens.js';
import type { JobEvent, JobSpec, JobStatus, LogEntry, LogQuery, Orchestrator, Replica, ReplicaMetrics, ReplicaState } from '../types.js';
import type { PodmanCli } from './cli.js';
import { ImagePulls } from './image-pulls.js';
import { NetworkIsolation, opens } from './isolation.js';
import { parseLogOutput } from './log-lines.js';
import type { ProtectedEndpoint } from './protected-endpoints.js';
import { LABEL, networkName, runArguments, splitEnvironment } from './run-args.js';
import type { PodmanSettings } from './settings.js';
import { parsePercent, parseSize, type PodmanStatsRow } from './stats.js';

interface ContainerInfo {
  Names: string[];
  State: string;
  ExitCode: number;
  Labels: Record<string, string> | null;
  /** Seconds since the epoch: a restarted container may have a new address. */
  StartedAt: number;
}

interface ReplicaRecord {
  id: string;
  spec: JobSpec;
  state: ReplicaState;
  address: string | null;
  /** The container start `address` was read for (ps's StartedAt). */
  addressOf: number | null;
  restarts: number;
  restartAt: number;
  startedAt: Date | null;
  error: string | null;
  /** A podman command for this replica is in flight; the tick leaves it alone. */
  busy: boolean;
}

interface Job {
  spec: JobSpec;
  replicas: Map<string, ReplicaRecord>;
  events: JobEvent[];
}

const LEVEL_RANK = { debug: 0, info: 1, warn: 2, error: 3 } as const;
const KEPT_EVENTS = 50;
const LOG_WINDOW = 1000;

/**
 * Runs agents as podman containers on this host and keeps them as asked: a supervision
 * tick inspects every managed container, restarts exited replicas with backoff (then
 * `crashed` past the budget), probes ports to decide when a replica is routable, rolls
 * out new versions health-gated (new replicas up before old ones stop), and removes
 * containers no job claims. Every change goes through one queue, so ticks and API calls
 * never act on a replica at the same time.
 */
export class PodmanDriver implements Orchestrator {
  readonly name = 'podman';
  private readonly jobs = new Map<string, Job>();
  private readonly listeners: ((agentId: string) => void)[] = [];
  private queue: Promise<unknown> = Promise.resolve();
  private timer: NodeJS.Timeout | undefined;
  /** Until the first reconcile, containers without a job may belong to agents not yet loaded: keep them. */
  private adopting = true;
  private closed = false;
  private readonly isolation: NetworkIsolation;
  private readonly pulls: ImagePulls;

  constructor(
    private readonly cli: PodmanCli,
    private readonly settings: PodmanSettings,
    private readonly clock: Clock,
    private readonly logger: Logger,
    /** What agents must not reach besides the metadata service: the platform's own services. */
    protectedEndpoints: ProtectedEndpoint[],
  ) {
    this.isolation = new NetworkIsolation(cli, settings, [...protectedEndpoints, ...settings.protectedEndpoints], logger);
    // Pulls run outside the queue; the tick after one ends starts (or fails) the replicas waiting for it.
    this.pulls = new ImagePulls(cli, settings.pullTimeoutMs, () => void this.serial(() => this.tick()));
  }

  start(): void {
    // First in the queue: no replica starts before the host's isolation was checked.
    void this.serial(() => this.isolation.start());
    this.timer = setInterval(() => void this.serial(() => this.tick()), this.settings.pollIntervalMs);
  }

  onChange(listener: (agentId: string) => void): void {
    this.listeners.push(listener);
  }

  submit(spec: JobSpec): Promise<void> {
    return this.serial(async () => {
      const job = this.jobs.get(spec.agentId);
      if (job) {
        if (spec.version >= job.spec.version) job.spec = spec;
      } else {
        this.jobs.set(spec.agentId, { spec, replicas: new Map(), events: [] });
      }
      this.event(spec.agentId, null, 'submitted', `version ${spec.version}, ${spec.count} replica(s) of ${spec.image}`);
      await this.tick();
    });
  }

  scale(agentId: string, count: number): Promise<void> {
    return this.serial(async () => {
      const job = this.jobs.get(agentId);
      if (!job) return;
      job.spec = { ...job.spec, count };
      this.event(agentId, null, 'scaled', `${count} replica(s)`);
      await this.tick();
    });
  }

  remove(agentId: string): Promise<void> {
    return this.serial(async () => {
      this.jobs.delete(agentId);
      const containers = await this.containers([`${LABEL.agentId}=${agentId}`]);
      await this.removeContainers(containers.map((c) => c.Names[0]!));
      await this.cli.run(['network', 'rm', '--force', networkName(agentId)]).catch(() => undefined);
      await this.isolation.release(networkName(agentId));
      this.notify([agentId]);
    });
  }

  reconcile(specs: JobSpec[]): Promise<void> {
    return this.serial(async () => {
      const wanted = new Set(specs.map((spec) => spec.agentId));
      for (const agentId of [...this.jobs.keys()]) if (!wanted.has(agentId)) this.jobs.delete(agentId);
      for (const spec of specs) {
        const job = this.jobs.get(spec.agentId);
        if (!job) this.jobs.set(spec.agentId, { spec, replicas: new Map(), events: [] });
        else if (spec.version >= job.spec.version) job.spec = spec;
      }
      this.adopting = false;
      await this.tick();
      await this.removeStrayNetworks();
    });
  }

  async status(agentId: string): Promise<JobStatus | null> {
    const job = this.jobs.get(agentId);
    if (!job) return null;
    return {
      agentId,
      version: job.spec.version,
      count: job.spec.count,
      replicas: [...job.replicas.values()].map(toReplica),
      events: [...job.events],
    };
  }

  async logs(agentId: string, query: LogQuery): Promise<LogEntry[]> {
    const containers = await this.containers([`${LABEL.agentId}=${agentId}`]);
    const replicaIds = containers
      .map((c) => c.Names[0]!)
      .filter((id) => !query.replicaId || id === query.replicaId)
    const perReplica = await Promise.all(
      replicaIds.map(async (replicaId) => {
        try {
          const { stdout, stderr } = await this.cli.run(['logs', '--timestamps', '--tail', String(LOG_WINDOW), replicaId], 15_000);
          return [...parseLogOutput(stdout, agentId, replicaId, 'stdout'), ...parseLogOutput(stderr, agentId, replicaId, 'stderr')];
        } catch {
          return []; // removed between the listing and the read
        }
      }),
    );
    const minimum = LEVEL_RANK[query.level ?? 'debug'];
    const entries = perReplica
      .flat()
      .filter((entry) => LEVEL_RANK[entry.level] >= minimum)
      .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    return entries.slice(-query.limit);
  }

  async metrics(agentId: string): Promise<ReplicaMetrics[]> {
    const job = this.jobs.get(agentId);
    if (!job) return [];
    const running = [...job.replicas.values()].filter((r) => r.state === 'running' || r.state === 'starting');
    if (running.length === 0) return [];
    const rows = await this.cli.json<PodmanStatsRow[]>(['stats', '--no-stream', '--format', 'json', ...running.map((r) => r.id)], 15_000).catch(() => []);
    return rows.map((row) => {
      const record = job.replicas.get(row.name);
      return {
        replicaId: row.name,
        cpuPercent: parsePercent(row.cpu_percent),
        memoryMb: parseSize(row.mem_usage.split('/')[0] ?? '0') / (1024 * 1024),
        memoryLimitMb: record?.spec.memoryMb ?? 0,
      };
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    await this.queue.catch(() => undefined);
    await this.isolation.close();
  }

  /** Runs `work` after everything queued before it; a failure is logged, never breaks the queue. */
  private serial<T>(work: () => Promise<T>): Promise<T> {
    const run = this.queue.then(work);
    this.queue = run.catch((error) => {
      if (!this.closed) this.logger.error({ err: error }, 'podman driver step failed');
    });
    return run;
  }

  private async tick(): Promise<void> {
    if (this.closed) return;
    const containers = await this.containers();
    const byReplica = new Map(containers.map((c) => [c.Names[0]!, c]));
    const changed = new Set<string>();

    const strays = containers.filter((container) => !this.adopt(container, changed)).map((c) => c.Names[0]!);
    if (!this.adopting) await this.removeContainers(strays);
    await Promise.all([...this.jobs.values()].map((job) => this.converge(job, byReplica, changed)));
    this.notify([...changed]);
  }

  /** Claims a container for its agent's job (adopting it if no record knows it); false when no job wants it. */
  private adopt(container: ContainerInfo, changed: Set<string>): boolean {
    const labels = container.Labels ?? {};
    const replicaId = container.Names[0]!;
    const job = this.jobs.get(labels[LABEL.agentId] ?? '');
    if (!job) return false;
    const agentId = job.spec.agentId;
    if (job.replicas.has(replicaId)) return true;
    const version = Number(labels[LABEL.version] ?? 0);
    job.replicas.set(replicaId, {
      id: replicaId,
      spec: { ...job.spec, version },
      state: container.State === 'running' ? 'starting' : 'restarting',
      address: null,
      addressOf: null,
      restarts: 0,
      restartAt: 0,
      startedAt: this.clock.now(),
      error: null,
      busy: false,
    });
    this.event(agentId, replicaId, 'adopted', `found ${container.State} container of version ${version}`);
    changed.add(agentId);
    return true;
  }

  private async converge(job: Job, containers: Map<string, ContainerInfo>, changed: Set<string>): Promise<void> {
    const agentId = job.spec.agentId;
    const before = fingerprint(job);
    await Promise.all([...job.replicas.values()].filter((r) => !r.busy).map((record) => this.observe(job, record, containers.get(record.id))));

    const current = [...job.replicas.values()].filter((r) => r.spec.version === job.spec.version && r.state !== 'stopping');
    const live = current.filter((r) => r.state !== 'failed' && r.state !== 'crashed');
    // A version whose replicas cannot start (bad image) or keep crashing is not relaunched
    // until the next deploy: replacing them would only repeat the failure forever.
    const dead = current.length - live.length;
    if (live.length < job.spec.count && dead === 0) {
      // Image and network once per job, before the replicas start side by side. While the
      // image is being pulled the job waits with no replicas, and the queue moves on.
      const image = await this.pulls.state(job.spec.image);
      if (image.ready || image.error) {
        const prepared = image.error ?? (await this.ensureNetwork(job.spec.agentId).then(() => null, (error: unknown) => describe(error)));
        await Promise.all(Array.from({ length: job.spec.count - live.length }, () => this.launch(job, prepared)));
      }
    } else if (live.length > job.spec.count) {
      const surplus = [...live].sort((a, b) => stateRank(a.state) - stateRank(b.state)).slice(0, live.length - job.spec.count);
      await this.stop(job, surplus, 'scaled down');
    }

    // Health-gated rollout: older versions stop once the current one is fully up (or asked to be 0).
    const older = [...job.replicas.values()].filter((r) => r.spec.version < job.spec.version && r.state !== 'stopping');
    const ready = current.filter((r) => r.state === 'running').length;
    if (older.length > 0 && (ready >= job.spec.count || job.spec.count === 0)) {
      await this.stop(job, older, `replaced by version ${job.spec.version}`);
    }
    if (fingerprint(job) !== before) changed.add(agentId);
  }

  private async observe(job: Job, record: ReplicaRecord, container: ContainerInfo | undefined): Promise<void> {
    if (record.state === 'failed' || record.state === 'crashed' || record.state === 'stopping') return;
    const now = this.clock.now().getTime();
    if (container?.State === 'running') {
      // No port is published: the edge reaches the replica at its address on the agent's network.
      if (record.addressOf !== container.StartedAt) {
        const ip = await this.addressOnNetwork(record);
        record.address = ip ? `${ip}:${record.spec.port}` : null;
        record.addressOf = ip ? container.StartedAt : null;
      }
      if (record.state !== 'running') {
        const graceOver = now - (record.startedAt?.getTime() ?? now) >= this.settings.startGraceMs;
        const [host, port] = splitAddress(record.address);
        if ((host && (await opens(host, port))) || graceOver) {
          record.state = 'running';
          this.event(job.spec.agentId, record.id, 'ready', graceOver ? 'start grace period over: routed without a listening port' : 'port accepts connections');
        } else {
          record.state = 'starting';
        }
      }
      return;
    }
    if (record.state === 'restarting') {
      if (now >= record.restartAt) await this.restart(job, record, container !== undefined);
      return;
    }
    // It ran and now it does not: count the exit, then wait out the backoff or give up.
    record.restarts += 1;
    record.address = null;
    record.addressOf = null;
    const reason = container ? `exited with code ${container.ExitCode}` : 'container disappeared';
    if (record.restarts > this.settings.restartBudget) {
      record.state = 'crashed';
      record.error = `${reason}; restarted ${this.settings.restartBudget} times`;
      this.event(job.spec.agentId, record.id, 'crashed', record.error);
    } else {
      record.state = 'restarting';
      record.restartAt = now + Math.min(this.settings.restartBackoffBaseMs * 2 ** (record.restarts - 1), this.settings.restartBackoffMaxMs);
      this.event(job.spec.agentId, record.id, 'exited', `${reason}; restart ${record.restarts} of ${this.settings.restartBudget} after backoff`);
    }
  }

  private async restart(job: Job, record: ReplicaRecord, exists: boolean): Promise<void> {
    record.busy = true;
    try {
      await this.isolation.secure(networkName(record.spec.agentId));
      if (exists) await this.cli.run(['start', record.id]);
      else await this.runContainer(record);
      record.state = 'starting';
      record.startedAt = this.clock.now();
    } catch (error) {
      record.state = 'failed';
      record.error = describe(error);
      this.event(job.spec.agentId, record.id, 'failed', record.error);
    } finally {
      record.busy = false;
    }
  }

  /** Starts one replica; `preparationError` (image or network) fails it without trying. */
  private async launch(job: Job, preparationError: string | null): Promise<void> {
    const spec = job.spec;
    const record: ReplicaRecord = {
      id: `${spec.agentId}-${randomBase62(6).toLowerCase()}`,
      spec,
      state: 'pending',
      address: null,
      addressOf: null,
      restarts: 0,
      restartAt: 0,
      startedAt: null,
      error: null,
      busy: true,
    };
    job.replicas.set(record.id, record);
    try {
      if (preparationError) throw new Error(preparationError);
      await this.runContainer(record);
      record.state = 'starting';
      record.startedAt = this.clock.now();
      this.event(spec.agentId, record.id, 'started', `container started from ${spec.image}`);
    } catch (error) {
      record.state = 'failed';
      record.error = describe(error);
      this.event(spec.agentId, record.id, 'failed', record.error);
      await this.cli.run(['rm', '--force', record.id]).catch(() => undefined);
    } finally {
      record.busy = false;
    }
  }

  private async runContainer(record: ReplicaRecord): Promise<void> {
    const { fileContent, inherited } = splitEnvironment(record.spec);
    const dir = mkdtempSync(join(tmpdir(), 'agent-env-'));
    const envFile = join(dir, 'env');
    try {
      writeFileSync(envFile, fileContent, { mode: 0o600 });
      await this.cli.run(['rm', '--force', record.id]).catch(() => undefined);
      // Creation has the pull's deadline: a container that cannot be created in it fails the replica.
      await this.cli.run(runArguments({ replicaId: record.id, spec: record.spec, envFile }, this.settings), this.settings.pullTimeoutMs, inherited);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }

  /** The agent's network, created when missing; a replica runs there only once its isolation is proven. */
  private async ensureNetwork(agentId: string): Promise<void> {
    const name = networkName(agentId);
    const exists = await this.cli.run(['network', 'exists', name]).then(() => true, () => false);
    if (!exists) {
      await this.cli.run(['network', 'create', '--opt', 'isolate=true', '--label', `${LABEL.instance}=${this.settings.instance}`, '--label', `${LABEL.agentId}=${agentId}`, name]);
    }
    await this.isolation.secure(name);
  }

  /** The replica's IPv4 address on its agent's network, or null while podman shows none. */
  private async addressOnNetwork(record: ReplicaRecord): Promise<string | null> {
    const rows = await this.cli
      .json<{ NetworkSettings?: { Networks?: Record<string, { IPAddress?: string }> } }[]>(['container', 'inspect', record.id])
      .catch(() => []);
    return rows[0]?.NetworkSettings?.Networks?.[networkName(record.spec.agentId)]?.IPAddress || null;
  }

  private async stop(job: Job, records: ReplicaRecord[], why: string): Promise<void> {
    const routed = records.some((r) => r.state === 'running');
    for (const record of records) {
      record.state = 'stopping';
      record.address = null;
      record.addressOf = null;
      this.event(job.spec.agentId, record.id, 'stopping', why);
    }
    if (routed && this.settings.drainMs > 0) {
      this.notify([job.spec.agentId]);
      await new Promise((resolve) => setTimeout(resolve, this.settings.drainMs));
    }
    await this.removeContainers(records.map((r) => r.id));
    for (const record of records) job.replicas.delete(record.id);
  }

  private async removeContainers(names: string[]): Promise<void> {
    if (names.length === 0) return;
    await this.cli.run(['rm', '--force', '--time', String(this.settings.stopTimeoutSeconds), ...names], 120_000).catch((error) => {
      this.logger.warn({ err: error }, 'removing containers failed');
    });
  }

  private async removeStrayNetworks(): Promise<void> {
    const networks = await this.cli.json<{ name: string; labels?: Record<string, string> }[]>(['network', 'ls', '--filter', `label=${LABEL.instance}=${this.settings.instance}`, '--format', 'json']).catch(() => []);
    const stray = networks.filter((n) => !this.jobs.has(n.labels?.[LABEL.agentId] ?? '')).map((n) => n.name);
    for (const name of stray) {
      await this.cli.run(['network', 'rm', '--force', name]).catch(() => undefined);
      await this.isolation.release(name);
    }
  }

  private containers(extraLabels: string[] = []): Promise<ContainerInfo[]> {
    const filters = [`${LABEL.instance}=${this.settings.instance}`, ...extraLabels].flatMap((label) => ['--filter', `label=${label}`]);
    return this.cli.json<ContainerInfo[]>(['ps', '--all', ...filters, '--format', 'json'], 30_000);
  }

  private event(agentId: string, replicaId: string | null, type: string, message: string): void {
    const job = this.jobs.get(agentId);
    if (!job) return;
    job.events.push({ at: this.clock.now(), replicaId, type, message });
    if (job.events.length > KEPT_EVENTS) job.events.splice(0, job.events.length - KEPT_EVENTS);
    this.logger.info({ agent_id: agentId, replica_id: replicaId, event: type }, message);
  }

  private notify(agentIds: string[]): void {
    for (const agentId of agentIds) for (const listener of this.listeners) listener(agentId);
  }
}

const toReplica = (record: ReplicaRecord): Replica => ({
  id: record.id,
  version: record.spec.version,
  state: record.state,
  address: record.address,
  restarts: record.restarts,
  startedAt: record.startedAt,
  error: record.error,
});

/** Which replicas go first when scaling down: those doing the least good. */
const stateRank = (state: ReplicaState) => ['failed', 'crashed', 'pending', 'restarting', 'starting', 'stopping', 'running'].indexOf(state);

const fingerprint = (job: Job) =>
  [...job.replicas.values()].map((r) => `${r.id}:${r.state}:${r.address}:${r.restarts}`).join('|') + `#${job.spec.count}`;

const describe = (error: unknown) => (error instanceof Error ? error.message : String(error));

/** `ip:port` → [ip, port]; [null, 0] for no address. */
function splitAddress(address: string | null): [string | null, number] {
  if (!address) return [null, 0];
  const colon = address.lastIndexOf(':');
  return [address.slice(0, colon), Number(address.slice(colon + 1))];
}
