import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { JobSpec } from '../../domain/job.js';
import type { PodmanCli, PodmanOutput } from './cli.js';
import { TOKEN_FILE, type ReplicaTokenFiles } from './replica-tokens.js';
import type { SecretScratch } from './secret-scratch.js';
import { LABEL, networkName, runArguments, splitEnvironment } from './run-args.js';
import type { PodmanSettings } from './settings.js';
import { parseStats, STATS_FORMAT, type ContainerStats } from './stats.js';

/** Containers removed in parallel; more wait their turn (remove). */
const REMOVALS_AT_ONCE = 10;

/**
 * How long a podman call that stops a container (stop, restart, rm --force) may run. Podman
 * sends SIGTERM, waits the stop timeout, then sends SIGKILL and waits up to 5 s more
 * (containers/podman, libpod/oci_conmon_common.go `StopContainer`; `killContainerTimeout` in
 * libpod/oci_util.go), then tears down the container's network and mounts. The SIGKILL is
 * podman's to send: a podman process ended by our deadline first would leave the container
 * running past its timeout, never killed, as a fixed 120 s did for STOP_TIMEOUT_SECONDS
 * past 115. A minute for the teardown, and two minutes at the least, as before.
 */
export const stopCallDeadlineMs = (stopTimeoutSeconds: number) => Math.max(120_000, (stopTimeoutSeconds + 5 + 60) * 1000);

/** One row of `podman ps --format json`. */
export interface ContainerInfo {
  Names: string[];
  State: string;
  ExitCode: number;
  Labels: Record<string, string> | null;
  /** Seconds since the epoch: a restarted container may have a new address. */
  StartedAt: number;
}

/** Lines read from the end of each replica's log. */
const LOG_WINDOW = 1000;

/** The podman commands on this installation's agent containers, each with its deadline. */
export class AgentContainers {
  constructor(
    private readonly cli: PodmanCli,
    private readonly settings: PodmanSettings,
    private readonly logger: Logger,
    /**
     * Where each replica's env file is written: it holds the agent's secrets, opened. It may go
     * once `podman run` returns: podman reads it on the client side into the container's spec
     * (containers/podman, pkg/specgenutil/specgen.go, FillOutSpecGen: "env-file and env
     * handled on client side"), so a restart of the container does not read it again.
     */
    private readonly secrets: SecretScratch,
    /** Agent services (issue 37): their URL for each replica's environment, and the token files; null when off. */
    private readonly agentServices: { url: string; maxSessionBytes: number; tokens: ReplicaTokenFiles } | null = null,
  ) {}

  /** This installation's containers (of one agent with `agentId`), running or not. */
  list(agentId?: string): Promise<ContainerInfo[]> {
    const labels = [`${LABEL.instance}=${this.settings.instance}`, ...(agentId === undefined ? [] : [`${LABEL.agentId}=${agentId}`])];
    return this.cli.json<ContainerInfo[]>(['ps', '--all', ...labels.flatMap((label) => ['--filter', `label=${label}`]), '--format', 'json'], 30_000);
  }

  /** Creates and starts the replica's container, replacing any of that name. */
  /** `fresh`: the name was never used, so there is no leftover container of it to discard (one podman call less on a start). */
  async run(replicaId: string, spec: JobSpec, { fresh = false } = {}): Promise<void> {
    const { fileContent, inherited } = splitEnvironment(spec);
    await this.secrets.use(async (directory) => {
      const envFile = join(directory, 'env');
      const services = this.agentServices;
      // The agent services (issue 37): where, the token's file, and the session size the API takes.
      const servicesEnv = services ? `\nAGENT_SERVICES_URL=${services.url}\nAGENT_SERVICES_TOKEN_FILE=${TOKEN_FILE}\nSESSION_MAX_BYTES=${services.maxSessionBytes}` : '';
      writeFileSync(envFile, fileContent + servicesEnv, { mode: 0o600 });
      const tokenDirectory = services ? services.tokens.prepare(replicaId, spec.agentId) : null;
      if (!fresh) await this.discard(replicaId);
      // Creation has the pull's deadline: a container that cannot be created in it fails the replica.
      await this.cli.run(runArguments({ replicaId, spec, envFile, tokenDirectory }, this.settings), this.settings.pullTimeoutMs, inherited);
    });
  }

  async start(replicaId: string): Promise<void> {
    await this.cli.run(['start', replicaId]);
  }

  /** Freezes every process of the container (the cgroup freezer): no CPU, its memory kept (parking.ts). */
  async pause(replicaId: string): Promise<void> {
    await this.cli.run(['pause', replicaId]);
  }

  async unpause(replicaId: string): Promise<void> {
    await this.cli.run(['unpause', replicaId]);
  }

  /** Stops the container and keeps it, for a later `start`: SIGTERM, then the stop timeout. */
  async stop(replicaId: string): Promise<void> {
    await this.cli.run(['stop', '--time', String(this.settings.stopTimeoutSeconds), replicaId], stopCallDeadlineMs(this.settings.stopTimeoutSeconds));
  }

  /** Removes a container that never served (its start failed), if there is one, and its token directory. */
  async discard(replicaId: string): Promise<void> {
    await this.cli.run(['rm', '--force', replicaId]).then(() => this.forgetTokens(replicaId), () => undefined);
  }

  /**
   * A removed replica's token directory goes with it. The next tick would drop it too
   * (keepTokensFresh), but a process that stops after a removal runs no next tick: each
   * deleted agent or finished run of a test or bench left a directory under /run.
   */
  private forgetTokens(replicaId: string): void {
    this.agentServices?.tokens.forget(replicaId);
  }

  /**
   * The token of every replica listed by `list` kept fresh (replica-tokens.ts); with
   * `removeOthers` (once the jobs are all known), the token directories of replicas gone go.
   * `leaving`: replicas being removed, whose tokens are neither written nor dropped here.
   */
  keepTokensFresh(containers: ContainerInfo[], { removeOthers, leaving }: { removeOthers: boolean; leaving?: ReadonlySet<string> }): void {
    if (!this.agentServices) return;
    const replicas = containers.flatMap((c) => {
      const agentId = c.Labels?.[LABEL.agentId];
      // Stopped ones too: a restart (`podman start`) mounts the same directory again.
      return agentId ? [{ replicaId: c.Names[0]!, agentId }] : [];
    });
    this.agentServices.tokens.keepFresh(replicas, { removeOthers, leaving });
  }

  /**
   * Stops (SIGTERM, then the stop timeout) and removes, with its token directory; a failure is logged, and the next poll
   * sees what is left. A container already gone (a retirement's removal meeting a deletion's)
   * is no failure: `--force` sets `--ignore` (containers/podman, cmd/podman/containers/rm.go, rm). One `rm` per container: given several names of which one no longer
   * exists, podman 4.3's `rm --force` removes none of them and still exits 0. At most
   * REMOVALS_AT_ONCE at a time: an agent has ten replicas at most, but the strays a restart
   * finds have no such bound, and each `rm` is a podman process of its own.
   */
  async remove(replicaIds: string[]): Promise<void> {
    const waiting = [...replicaIds];
    const removeNext = async (): Promise<void> => {
      for (let replicaId = waiting.shift(); replicaId !== undefined; replicaId = waiting.shift()) {
        await this.cli.run(['rm', '--force', '--time', String(this.settings.stopTimeoutSeconds), replicaId], stopCallDeadlineMs(this.settings.stopTimeoutSeconds)).then(
          () => this.forgetTokens(replicaId),
          (error) => this.logger.warn({ err: error, replica_id: replicaId }, 'removing a container failed'),
        );
      }
    };
    await Promise.all(Array.from({ length: Math.min(REMOVALS_AT_ONCE, waiting.length) }, removeNext));
  }

  /**
   * What a running replica's container is, read once per start of it: its IPv4 address on its
   * agent's network (null while podman shows none), and whether it mounts the token directory
   * this driver writes (ReplicaTokenFiles.mountedBy; null when that cannot be told, or with
   * agent services off).
   */
  async inspectStarted(replicaId: string, agentId: string): Promise<{ ip: string | null; mountsItsTokens: boolean | null }> {
    const rows = await this.cli
      .json<{ State?: { Pid?: number }; NetworkSettings?: { Networks?: Record<string, { IPAddress?: string }> } }[]>(['container', 'inspect', replicaId])
      .catch(() => []);
    const pid = rows[0]?.State?.Pid ?? 0;
    return {
      ip: rows[0]?.NetworkSettings?.Networks?.[networkName(agentId)]?.IPAddress || null,
      mountsItsTokens: this.agentServices && pid > 0 ? this.agentServices.tokens.mountedBy(replicaId, pid) : null,
    };
  }

  /** Stops the replica's container (SIGTERM, then the stop timeout) and starts it again, with its mounts made anew. */
  async restart(replicaId: string): Promise<void> {
    await this.cli.run(['restart', '--time', String(this.settings.stopTimeoutSeconds), replicaId], stopCallDeadlineMs(this.settings.stopTimeoutSeconds));
  }

  /** The newest lines of the replica's log, with podman's timestamps. */
  logs(replicaId: string): Promise<PodmanOutput> {
    return this.cli.run(['logs', '--timestamps', '--tail', String(LOG_WINDOW), replicaId], 15_000);
  }

  /** One sample of each running replica's CPU and memory; none when podman cannot tell. */
  stats(replicaIds: string[]): Promise<ContainerStats[]> {
    return this.cli.run(['stats', '--no-stream', '--format', STATS_FORMAT, ...replicaIds], 15_000).then(({ stdout }) => parseStats(stdout)).catch(() => []);
  }
}
