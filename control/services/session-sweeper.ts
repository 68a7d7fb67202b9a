import type { Knex } from 'knex';
import type { Logger } from 'pino';
import type { Clock } from '../../contract/clock.js';
import { repositoriesOn } from '../repositories/index.js';
import { PeriodicPass, PeriodicService, type LoopOptions } from './periodic-pass.js';

/**
 * Once a minute: an expired session is gone to every reader at once (they check its expiry),
 * so the sweep only gives its storage back and need not be prompt.
 */
export const SESSION_SWEEP_INTERVAL_MS = 60_000;

/** Rows per DELETE: each batch is its own short statement, so no sweep holds many rows' locks at once. */
const BATCH = 1000;

/** Batches per pass, so one pass ends even while sessions expire faster than it deletes; the next pass goes on. */
const MAX_BATCHES = 100;

/** Deletes agents' sessions past their time to live (deploy.session_ttl_seconds after their last use), in one copy of the control API at a time. */
export class SessionSweeper extends PeriodicService {
  protected readonly loop: PeriodicPass;

  constructor(private readonly db: Knex, private readonly clock: Clock, logger: Logger, options: LoopOptions & { intervalMs?: number; batchSize?: number }) {
    super();
    const { intervalMs = SESSION_SWEEP_INTERVAL_MS, batchSize = BATCH, ...loopOptions } = options;
    this.loop = new PeriodicPass({ ...loopOptions, loop: 'session-sweeper', intervalMs, logger, pass: () => this.pass(batchSize), failureMessage: 'session sweep failed; the next pass retries' });
  }

  private async pass(batchSize: number): Promise<void> {
    const sessions = repositoriesOn(this.db).agentSessions;
    const now = this.clock.now();
    for (let batch = 0; batch < MAX_BATCHES; batch += 1) {
      if ((await sessions.deleteExpired(now, batchSize)) < batchSize) return;
    }
  }
}
