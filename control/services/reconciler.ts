import type { Logger } from 'pino';
import type { AgentRunner } from './agent-runner.js';
import type { EdgeSync } from './edge-sync.js';
import { PeriodicPass, PeriodicService, type LoopOptions } from './periodic-pass.js';

/**
 * Brings the orchestrator in line with Postgres at start and then periodically, so a
 * crash of the control API, a container removed by hand or a lost notification heals
 * without anyone calling the API.
 */
export class Reconciler extends PeriodicService {
  protected readonly loop: PeriodicPass;

  constructor(
    private readonly runner: AgentRunner,
    private readonly edge: EdgeSync,
    intervalMs: number,
    logger: Logger,
    options: LoopOptions = {},
  ) {
    super();
    this.loop = new PeriodicPass({ ...options, loop: 'reconciler', intervalMs, logger, pass: () => this.reconcile(), failureMessage: 'reconcile failed' });
  }

  /** Adopts what runs and restarts what is missing (awaited: before the API takes requests), then every interval. */
  override async start(): Promise<void> {
    await this.loop.runOnce();
    this.loop.start();
  }

  private async reconcile(): Promise<void> {
    await this.runner.reconcileAll();
    // Then the edge: a flushed or lost Redis heals here without any API call.
    await this.edge.rebuild();
  }
}
