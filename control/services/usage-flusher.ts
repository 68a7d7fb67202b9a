import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { Clock } from '../../contract/clock.js';
import { inTransaction, repositoriesOn } from '../repositories/index.js';
import { edgeKeyNames, edgeKeyPatterns, parseUsageFlushingKey, parseUsageKey } from '../../contract/edge-keys.js';
import { scanKeys } from '../db/redis.js';
import { PeriodicPass, PeriodicService, type LoopOptions } from './periodic-pass.js';

/**
 * Moves the request counters authz keeps in Redis (`edge:usage:{slug}:YYYY-MM`, one INCR
 * per allowed request) into Postgres, exactly once:
 *   1. RENAME the counter to `edge:usage-flushing:{slug}:<month>:<flush id>`: atomic, so
 *      requests counted from then on start a fresh counter and none is lost in between;
 *   2. one transaction records the flush id and adds the count (a flush id seen before
 *      means a crash hit between commit and step 3: nothing is added twice);
 *   3. DEL the flushing key.
 * Leftover flushing keys (a crash between 1 and 3) are finished first on every pass.
 */
export class UsageFlusher extends PeriodicService {
  protected readonly loop: PeriodicPass;

  constructor(
    private readonly db: Knex,
    private readonly redis: Redis,
    private readonly clock: Clock,
    intervalMs: number,
    private readonly logger: Logger,
    options: LoopOptions = {},
  ) {
    super();
    this.loop = new PeriodicPass({
      ...options, loop: 'usage-flusher', intervalMs, logger, pass: () => this.flushAll(), failureMessage: 'usage flush failed; counters stay in Redis for the next pass',
    });
  }

  /** Flushes at once (not awaited: the API need not wait for it), then every interval. */
  override start(): void {
    void this.loop.runOnce();
    this.loop.start();
  }

  /** Stops the timer and flushes once more, so a shutdown loses no count. */
  override async stop(): Promise<void> {
    await this.loop.stop();
    await this.loop.runOnce();
  }

  /** One pass at a time; failures are logged and the counters stay in Redis for the next. */
  flush(): Promise<void> {
    return this.loop.runOnce();
  }

  private async flushAll(): Promise<void> {
    for (const key of await this.scan(edgeKeyPatterns.usageFlushing)) await this.finish(key);
    for (const key of await this.scan(edgeKeyPatterns.usage)) {
      const counter = parseUsageKey(key);
      if (!counter) continue;
      const { slug, month } = counter;
      // Counters of agents this database does not know (deleted before their last flush,
      // or another installation sharing Redis) are left alone rather than billed to nobody.
      if (!(await repositoriesOn(this.db).agents.findBySlug(slug))) continue;
      const flushing = edgeKeyNames.usageFlushing(slug, month, randomUUID());
      // The counter may have expired or been flushed by another copy since SCAN saw it.
      const renamed = await this.redis.renamenx(key, flushing).catch(() => 0);
      if (renamed === 1) await this.finish(flushing);
    }
  }

  private async finish(flushingKey: string): Promise<void> {
    const flushing = parseUsageFlushingKey(flushingKey);
    if (!flushing) return;
    const { slug, month, flushId } = flushing;
    const count = Number(await this.redis.get(flushingKey));
    const agent = await repositoriesOn(this.db).agents.findBySlug(slug);
    if (!agent) {
      this.logger.warn({ slug }, 'usage being flushed for an agent deleted meanwhile: left in Redis');
      return;
    }
    if (count > 0) {
      await inTransaction(this.db, (repos) => repos.usage.addRequests(flushId, { accountId: agent.account_id, agentId: agent.id, month, count }, this.clock.now()));
    }
    await this.redis.del(flushingKey);
  }

  /** Under REDIS_KEY_PREFIX too: scanKeys adds the prefix to the pattern and takes it off the names. */
  private scan(pattern: string): Promise<string[]> {
    return scanKeys(this.redis, pattern);
  }
}
