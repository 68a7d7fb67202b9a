import type { Logger } from 'pino';
import { FairQueue, type Step } from './fair-queue.js';

/**
 * Runs orchestrator work after the API has answered, in FairQueue's order: per agent in
 * sequence, at most ORCHESTRATOR_CONCURRENCY at once, accounts round-robin. Nothing here is
 * durable and nothing needs to be: Postgres holds the desired state before a step is
 * queued, and the reconciler rebuilds every job from it after a crash.
 */
export class OrchestrationQueue {
  private readonly order: FairQueue;
  private readonly running = new Set<Promise<void>>();
  private closed = false;

  constructor(
    concurrency: number,
    private readonly perform: (step: Step) => Promise<void>,
    private readonly logger: Logger,
  ) {
    this.order = new FairQueue(concurrency);
  }

  enqueue(step: Step): void {
    if (this.closed) return;
    this.order.add(step);
    this.startWhatMay();
  }

  get size(): { waiting: number; inFlight: number } {
    return this.order.size;
  }

  /** Starts nothing more (what waits is dropped: the next start reconciles it) and waits for the steps in flight. */
  async close(): Promise<void> {
    this.closed = true;
    while (this.running.size > 0) await Promise.allSettled([...this.running]);
  }

  private startWhatMay(): void {
    for (let step = this.order.take(); step; step = this.closed ? null : this.order.take()) {
      const run = this.execute(step);
      this.running.add(run);
      void run.finally(() => this.running.delete(run));
    }
  }

  private async execute(step: Step): Promise<void> {
    try {
      await this.perform(step);
    } catch (error) {
      // The agent's row still says what is wanted: the reconciler's next pass tries again.
      this.logger.warn({ err: error, agent_id: step.agentId, operation: step.operation }, 'orchestrator step failed');
    } finally {
      this.order.finish(step.agentId);
      if (!this.closed) this.startWhatMay();
    }
  }
}
