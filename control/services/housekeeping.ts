import type { Knex } from 'knex';
import type { Logger } from 'pino';
import type { Clock } from '../../contract/clock.js';
import { repositoriesOn } from '../repositories/index.js';
import { PeriodicPass, PeriodicService, type LoopOptions } from './periodic-pass.js';

/** Once an hour: rows past their end of life leave no trace the API would act on, so nothing is in a hurry. */
export const HOUSEKEEPING_INTERVAL_MS = 3_600_000;

const DAY_MS = 86_400_000;

/**
 * Removes what has outlived its use: expired sessions (a refused token stays refused
 * whether its row is there or not, so this only keeps the table from growing with every
 * sign-in) and audit events older than AUDIT_RETENTION_DAYS. Each copy of the control API
 * may run it; the deletes are idempotent.
 */
export class Housekeeping extends PeriodicService {
  protected readonly loop: PeriodicPass;
  private readonly auditRetentionMs: number;

  constructor(
    private readonly db: Knex,
    private readonly clock: Clock,
    logger: Logger,
    options: LoopOptions & { intervalMs?: number; auditRetentionDays: number },
  ) {
    super();
    const { intervalMs = HOUSEKEEPING_INTERVAL_MS, auditRetentionDays, ...loopOptions } = options;
    this.auditRetentionMs = auditRetentionDays * DAY_MS;
    this.loop = new PeriodicPass({ ...loopOptions, loop: 'housekeeping', intervalMs, logger, pass: () => this.pass(), failureMessage: 'housekeeping pass failed; the next pass retries' });
  }

  private async pass(): Promise<void> {
    const repos = repositoriesOn(this.db);
    const now = this.clock.now();
    await repos.sessions.deleteExpired(now);
    await repos.auditEvents.deleteBefore(new Date(now.getTime() - this.auditRetentionMs));
  }
}
