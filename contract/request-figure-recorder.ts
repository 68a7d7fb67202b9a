import type { Redis } from 'ioredis';
import { edgeKeyNames } from './edge-keys.js';
import { runPipeline } from './redis-pipeline.js';
import { addRequest, canaryIncrements, emptyTally, REQUEST_FIGURES_TTL_SECONDS, tallyIncrements, type RequestTally } from './request-figures.js';

/**
 * Where an edge reports each request it forwarded to an agent: authz's access-log service
 * (from Envoy's entries) and the local edge (directly) feed the same recorder.
 */
export interface RequestFigureSink {
  /**
   * The agent that answered, its HTTP status and the upstream time, and whether the replica
   * was the agent's canary (default: stable). A counter update: no I/O.
   */
  record(agentId: string, status: number, upstreamMs: number, canary?: boolean): void;
}

export interface RequestFigureRecorder extends RequestFigureSink {
  /** Adds what was counted since the last flush to Redis; the recorder's timer calls it every second. */
  flush(): Promise<void>;
  /** Stops the timer and flushes what is left. */
  close(): Promise<void>;
}

export interface RequestFigureRecorderOptions {
  /** Carries the installation's REDIS_KEY_PREFIX, as every edge client does. */
  redis: Redis;
  /** Told when a flush fails; that flush's figures are dropped, never retried (a retry could count twice). */
  onError: (error: Error) => void;
  /** Default 1 s: each agent's second is written once, not once per request. */
  flushIntervalMs?: number;
  /** Default Date.now; tests move it. */
  nowMs?: () => number;
}

interface AgentSecond {
  agentId: string;
  epochSecond: number;
  /** Every version's requests. */
  tally: RequestTally;
  /** The canary's share of them; made on the second's first canary request, so an agent without a canary allocates nothing more. */
  canary: RequestTally | null;
}

/**
 * Tallies requests in memory, per agent and second, and adds each tally to its Redis hash
 * with HINCRBY on the next flush, so several edge processes add up rather than overwrite.
 * A request costs a map lookup and a few additions; a new tally is made once per agent and second.
 */
export function createRequestFigureRecorder(options: RequestFigureRecorderOptions): RequestFigureRecorder {
  const nowMs = options.nowMs ?? Date.now;
  let current = new Map<string, AgentSecond>();
  // Seconds an agent moved past before the flush took them.
  let finished: AgentSecond[] = [];

  async function flush(): Promise<void> {
    const due = [...finished, ...current.values()];
    current = new Map();
    finished = [];
    if (due.length === 0) return;
    const pipeline = options.redis.pipeline();
    for (const { agentId, epochSecond, tally, canary } of due) {
      const key = edgeKeyNames.requestFigures(agentId, epochSecond);
      // Totals first: a reader between the two never sees a canary share larger than the total.
      for (const [field, increment] of tallyIncrements(tally)) pipeline.hincrby(key, field, increment);
      if (canary) for (const [field, increment] of canaryIncrements(canary)) pipeline.hincrby(key, field, increment);
      pipeline.expire(key, REQUEST_FIGURES_TTL_SECONDS);
    }
    await runPipeline(pipeline, options.onError);
  }

  const timer = setInterval(() => void flush(), options.flushIntervalMs ?? 1_000);
  timer.unref();

  return {
    record(agentId, status, upstreamMs, canary = false) {
      const epochSecond = Math.floor(nowMs() / 1000);
      let second = current.get(agentId);
      if (second === undefined || second.epochSecond !== epochSecond) {
        if (second !== undefined) finished.push(second);
        second = { agentId, epochSecond, tally: emptyTally(), canary: null };
        current.set(agentId, second);
      }
      addRequest(second.tally, status, upstreamMs);
      if (canary) addRequest((second.canary ??= emptyTally()), status, upstreamMs);
    },
    flush,
    async close() {
      clearInterval(timer);
      await flush();
    },
  };
}
