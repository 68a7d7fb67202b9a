import type { Logger } from 'pino';
import type { AgentRunner } from './agent-runner.js';
import type { EdgeSync } from './edge-sync.js';
import type { ExclusivePass } from './exclusive-pass.js';

/**
 * Brings the orchestrator in line with Postgres at start and then periodically, so a
 * crash of the control API, a container removed by hand or a lost notification heals
 * without anyone calling the API.
 */
export class Reconciler {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;

  constructor(
    private readonly runner: AgentRunner,
    private readonly edge: EdgeSync,
    private readonly intervalMs: number,
    private readonly logger: Logger,
    /** With more than one copy of the control API, only the copy holding the lock runs a pass. */
    private readonly exclusive: ExclusivePass = async (pass) => (await pass(), true),
  ) {}

  async start(): Promise<void> {
    await this.runOnce();
    this.timer = setInterval(() => void this.runOnce(), this.intervalMs);
    this.timer.unref();
  }

  /** One pass at a time: a slow pass is not stacked on by the next tick. */
  runOnce(): Promise<void> {
    this.running ??= this.exclusive(() =>
      this.runner
        .reconcileAll()
        // Then the edge: a flushed or lost Redis heals here without any API call.
        .then(() => this.edge.rebuild()),
    )
      .then(() => undefined)
      .catch((error) => this.logger.error({ err: error }, 'reconcile failed'))
      .finally(() => {
        this.running = undefined;
      });
    return this.running;
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.running;
  }
}
