import { createInterface } from 'node:readline';
import type { Logger } from 'pino';
import type { PodmanCli } from './cli.js';
import { LABEL } from './run-args.js';

/** A replica's container ended: its name (the replica id), exit code and when, as podman saw it. */
export interface ContainerDeath {
  name: string;
  exitCode: number | null;
  at: Date;
}

/** How long to wait before following podman's events again after the stream ended. */
const RESTART_DELAY_MS = 1_000;

/**
 * Follows podman's `died` events for this installation's containers, so a replica leaves
 * routing as its container dies rather than at the next poll (issue 31, finding 1). podman
 * writes `died` when it syncs the exited container's state, before it tears the network
 * down (libpod/container_internal.go: `syncContainer` → `handleExitFile` writes the
 * event; `cleanup` → `cleanupNetwork` comes after), so the edge hears of it while the
 * bridge still exists. Polls remain the source of truth: an event only hurries them.
 */
export class ContainerDeaths {
  private child: ReturnType<PodmanCli['stream']> | null = null;
  private restart: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(
    private readonly cli: PodmanCli,
    private readonly instance: string,
    private readonly onDeath: (death: ContainerDeath) => void,
    private readonly logger: Logger,
  ) {}

  start(): void {
    if (this.stopped || this.child) return;
    const child = this.cli.stream([
      'events', '--format', 'json', '--filter', 'type=container', '--filter', 'event=died',
      '--filter', `label=${LABEL.instance}=${this.instance}`,
    ]);
    this.child = child;
    createInterface({ input: child.stdout }).on('line', (line) => {
      const death = parseDeath(line);
      if (death) this.onDeath(death);
    });
    child.stderr.resume();
    child.once('error', (error) => this.logger.warn({ err: error }, 'podman events could not run: container deaths are seen at the next poll only'));
    child.once('close', (code) => {
      this.child = null;
      if (this.stopped) return;
      this.logger.warn({ code }, 'podman events ended; following it again');
      this.restart = setTimeout(() => this.start(), RESTART_DELAY_MS);
    });
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.restart);
    this.child?.kill('SIGKILL');
    this.child = null;
  }
}

/** One line of `podman events --format json`; null for anything but a container's death. */
export function parseDeath(line: string): ContainerDeath | null {
  try {
    const event = JSON.parse(line) as { Type?: string; Status?: string; Name?: unknown; ContainerExitCode?: unknown; Time?: unknown };
    const at = new Date(typeof event.Time === 'string' ? event.Time : NaN);
    if (event.Type !== 'container' || event.Status !== 'died' || typeof event.Name !== 'string' || Number.isNaN(at.getTime())) return null;
    return { name: event.Name, exitCode: typeof event.ContainerExitCode === 'number' ? event.ContainerExitCode : null, at };
  } catch {
    return null;
  }
}
