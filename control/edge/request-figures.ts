import type { Redis } from 'ioredis';
import type { Clock } from '../../contract/clock.js';
import { edgeKeyNames } from '../../contract/edge-keys.js';
import { addHash, emptyTally, figuresOf, FIGURES_WINDOW_SECONDS, type RequestFigures } from '../../contract/request-figures.js';

/**
 * An agent's request figures over the last minute, summed from the per-second hashes the
 * edge writes (docs/contract.md, "Request figures"): one pipelined HGETALL per second, all
 * in the agent's hash-tag slot.
 */
export class RequestFiguresReader {
  constructor(
    private readonly redis: Redis,
    private readonly clock: Clock,
  ) {}

  /**
   * The FIGURES_WINDOW_SECONDS seconds up to and including the current one. The edge writes
   * each second once it is over (within a second), so the newest second or two may still grow.
   */
  async lastMinute(agentId: string): Promise<RequestFigures> {
    const now = Math.floor(this.clock.now().getTime() / 1000);
    const pipeline = this.redis.pipeline();
    for (let second = now - FIGURES_WINDOW_SECONDS + 1; second <= now; second += 1) {
      pipeline.hgetall(edgeKeyNames.requestFigures(agentId, second));
    }
    const tally = emptyTally();
    for (const [error, hash] of (await pipeline.exec()) ?? []) {
      if (error) throw error;
      addHash(tally, hash as Record<string, string>);
    }
    return figuresOf(tally);
  }
}
