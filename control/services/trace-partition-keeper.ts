import type { Knex } from 'knex';
import type { Logger } from 'pino';
import type { Clock } from '../../contract/clock.js';
import { dayAfter, utcDay } from '../domain/trace-spans.js';
import { repositoriesOn } from '../repositories/index.js';
import { PeriodicPass, PeriodicService, type LoopOptions } from './periodic-pass.js';

/** Hourly: partitions are made a day ahead, so a pass missed or failed costs nothing until the next one. */
export const TRACE_PARTITION_INTERVAL_MS = 3_600_000;

/**
 * Keeps the trace tables' day partitions (migration 012): today's and tomorrow's made
 * ahead, and every day before TRACE_RETENTION_DAYS ago dropped whole, its spans and
 * invocations with it. Every step is idempotent (IF NOT EXISTS, IF EXISTS), so each copy
 * of the control API runs it, and the first pass runs at start.
 */
export class TracePartitionKeeper extends PeriodicService {
  protected readonly loop: PeriodicPass;

  constructor(
    private readonly db: Knex,
    private readonly clock: Clock,
    private readonly retentionDays: number,
    logger: Logger,
    options: LoopOptions & { intervalMs?: number },
  ) {
    super();
    const { intervalMs = TRACE_PARTITION_INTERVAL_MS, ...loopOptions } = options;
    this.loop = new PeriodicPass({ ...loopOptions, loop: 'trace-partitions', intervalMs, logger, pass: () => this.pass(), failureMessage: 'trace partition pass failed; the next pass retries' });
  }

  override async start(): Promise<void> {
    await this.loop.runOnce();
    this.loop.start();
  }

  private async pass(): Promise<void> {
    const partitions = repositoriesOn(this.db).tracePartitions;
    const today = utcDay(this.clock.now());
    await partitions.create(today);
    await partitions.create(dayAfter(today, 1));
    const oldestKept = dayAfter(today, -this.retentionDays);
    for (const day of await partitions.days()) {
      if (day < oldestKept) await partitions.drop(day);
    }
  }
}
