import type { Redis } from 'ioredis';
import type { Clock } from '../../contract/clock.js';
import { edgeKeyNames } from '../../contract/edge-keys.js';
import {
  addHash,
  addVersionedHash,
  emptyTally,
  emptyVersionTallies,
  figuresOf,
  FIGURES_WINDOW_SECONDS,
  versionFiguresOf,
  type RequestFigures,
  type VersionFigures,
} from '../../contract/request-figures.js';

type StoredHash = Record<string, string>;

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
   * Every version's requests together, a canary's included.
   */
  async lastMinute(agentId: string): Promise<RequestFigures> {
    const tally = emptyTally();
    for (const hash of await this.secondsOf(agentId, FIGURES_WINDOW_SECONDS)) addHash(tally, hash);
    return figuresOf(tally);
  }

  /**
   * The stable version's and the canary's figures over the last `windowSeconds` seconds (up
   * to and including the current one), for judging a canary against the version it would
   * replace. Stable is every version's totals less the canary's share. At most
   * FIGURES_WINDOW_SECONDS: older seconds may already have expired, and a shorter sum would
   * pass for the whole window.
   */
  async byVersion(agentId: string, windowSeconds: number = FIGURES_WINDOW_SECONDS): Promise<VersionFigures> {
    if (!Number.isInteger(windowSeconds) || windowSeconds < 1 || windowSeconds > FIGURES_WINDOW_SECONDS) {
      throw new RangeError(`windowSeconds must be a whole number from 1 to ${FIGURES_WINDOW_SECONDS}, not ${windowSeconds}`);
    }
    const tallies = emptyVersionTallies();
    for (const hash of await this.secondsOf(agentId, windowSeconds)) addVersionedHash(tallies, hash);
    return versionFiguresOf(tallies);
  }

  /** The hashes of the last `windowSeconds` seconds, the current one included; a second without requests is `{}`. */
  private async secondsOf(agentId: string, windowSeconds: number): Promise<StoredHash[]> {
    const now = Math.floor(this.clock.now().getTime() / 1000);
    const pipeline = this.redis.pipeline();
    for (let second = now - windowSeconds + 1; second <= now; second += 1) {
      pipeline.hgetall(edgeKeyNames.requestFigures(agentId, second));
    }
    return ((await pipeline.exec()) ?? []).map(([error, hash]) => {
      if (error) throw error;
      return hash as StoredHash;
    });
  }
}
