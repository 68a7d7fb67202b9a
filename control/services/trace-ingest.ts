import type { Knex } from 'knex';
import type { Redis } from 'ioredis';
import type { Clock } from '../../contract/clock.js';
import type { TraceSettings } from '../config/trace-settings.js';
import { PlatformError } from '../domain/errors.js';
import { dayAfter, utcDay, type SpanRow } from '../domain/trace-spans.js';
import { inTransaction, repositoriesOn } from '../repositories/index.js';
import type { ModelUse } from '../repositories/model-usage.js';
import type { StoredModelCall } from '../repositories/traces.js';
import type { ExportTraceServiceRequest } from '../schemas/otlp-traces.js';
import { spanKey, spanRowsOf, storedPart } from './otlp-spans.js';
import type { FixedWindowLimiter } from './rate-limiter.js';
import type { TraceForwarder } from './trace-forwarder.js';

/** Why spans were refused: the agent's daily cap, or a start time outside the days kept. */
export type SpanDropReason = 'daily_cap' | 'outside_retention';
export type SpansDroppedObserver = (reason: SpanDropReason, count: number) => void;

/** OTLP's ExportTracePartialSuccess: what the exporter is told of spans refused. */
export interface IngestOutcome {
  rejectedSpans: number;
  errorMessage?: string;
}

export interface TraceIngestDependencies {
  db: Knex;
  redis: Redis;
  clock: Clock;
  /** Counts each agent's requests a second (TRACE_REQUESTS_PER_SECOND), shared by every copy. */
  limiter: FixedWindowLimiter;
  settings: TraceSettings;
  onDropped?: SpansDroppedObserver;
  /** With OTEL_EXPORTER_OTLP_ENDPOINT: where stored spans go on to. */
  forwarder?: TraceForwarder;
}

const SECOND_MS = 1000;

/** The cap's count outlives its day by one, so a late request near midnight still finds it. */
const CAP_KEY_TTL_SECONDS = 2 * 86_400;

/**
 * Takes in the spans a replica sends (POST /v1/traces, issue 38), all stored under the
 * agent its token names. Spans the store cannot or may not keep are refused one by one and
 * reported as OTLP's partial success, never failing the rest: those starting outside the
 * days kept (before TRACE_RETENTION_DAYS ago or after tomorrow, which have or will have no
 * partition), and those past the agent's daily cap, counted in Redis so that one agent
 * cannot flood the store for all.
 */
export class TraceIngest {
  /** Days whose partitions this copy has seen made: only a day not in it costs a CREATE … IF NOT EXISTS. */
  private readonly daysMade = new Set<string>();

  constructor(private readonly deps: TraceIngestDependencies) {}

  /**
   * Lets the agent's request in, or refuses it (429 TRACE_RATE_LIMITED, Retry-After) past
   * TRACE_REQUESTS_PER_SECOND: asked before the body is read, so a replica that floods the
   * endpoint costs a Redis INCR per request rather than reading and parsing 4 MiB each.
   */
  async admit(agentId: string): Promise<void> {
    const perSecond = this.deps.settings.requestsPerAgentPerSecond;
    const decision = await this.deps.limiter.hit(`agent-traces:${agentId}`, perSecond, SECOND_MS);
    if (decision.allowed) return;
    throw new PlatformError('TRACE_RATE_LIMITED', `The agent sends traces more than ${perSecond} times a second; retry in ${decision.retryAfterSeconds} s`, {
      retry_after: decision.retryAfterSeconds,
    });
  }

  async ingest(agentId: string, request: ExportTraceServiceRequest): Promise<IngestOutcome> {
    const rows = spanRowsOf(request, agentId, this.deps.settings.prices);
    if (rows.length === 0) return { rejectedSpans: 0 };
    const repos = repositoriesOn(this.deps.db);
    // Traces have no foreign key to their agent: a token outliving its agent must not leave spans nobody deletes.
    const agent = await repos.agents.findAny(agentId);
    if (!agent) throw new PlatformError('UNAUTHENTICATED', 'The agent this token was issued for no longer exists');
    const today = utcDay(this.deps.clock.now());
    const [oldest, newest] = [dayAfter(today, -this.deps.settings.retentionDays), dayAfter(today, 1)];
    const kept = rows.filter((row) => utcDay(row.start_time) >= oldest && utcDay(row.start_time) <= newest);
    const outsideRetention = rows.length - kept.length;
    const allowed = await this.allowance(agentId, today, kept.length);
    const stored = kept.slice(0, allowed);
    const overCap = kept.length - stored.length;
    await this.ensurePartitions(stored);
    const traceIds = [...new Set(stored.map((row) => row.trace_id))];
    // One transaction: a span is stored only with its model call counted, since a span sent
    // again is kept once and counted never (insertSpans returns the new ones), and a reader
    // never sees spans without the summary that counts them.
    await inTransaction(this.deps.db, async (trx) => {
      await trx.traces.takeTurns(agentId, traceIds);
      const calls = await trx.traces.insertSpans(stored);
      if (calls.length > 0) await trx.modelUsage.add({ accountId: agent.account_id, agentId, month: today.slice(0, 7), ...modelUseOf(calls) });
      await trx.traces.summarise(agentId, traceIds);
    });
    this.deps.forwarder?.forward(storedPart(request, agentId, new Set(stored.map((row) => spanKey(row.trace_id, row.span_id)))), stored.length);
    return this.outcome(outsideRetention, overCap);
  }

  /** Resolves once every span handed to the forwarder so far has been sent or dropped: what a test waits for. */
  async forwarded(): Promise<void> {
    await this.deps.forwarder?.idle();
  }

  /** How many of `count` new spans fit under the agent's cap today: one INCRBY, shared by every copy of the control API. */
  private async allowance(agentId: string, today: string, count: number): Promise<number> {
    if (count === 0) return 0;
    const key = `traces:spans:${agentId}:${today}`;
    const results = await this.deps.redis.multi().incrby(key, count).expire(key, CAP_KEY_TTL_SECONDS, 'NX').exec();
    const total = Number(results?.[0]?.[1] ?? 0);
    return Math.max(0, Math.min(count, this.deps.settings.spansPerAgentPerDay - (total - count)));
  }

  /** The partitions of the spans' days: the loop makes them ahead (TracePartitionKeeper), this makes any it missed. */
  private async ensurePartitions(rows: SpanRow[]): Promise<void> {
    const days = new Set(rows.map((row) => utcDay(row.start_time)));
    const partitions = repositoriesOn(this.deps.db).tracePartitions;
    for (const day of days) {
      if (this.daysMade.has(day)) continue;
      await partitions.create(day);
      this.daysMade.add(day);
    }
  }

  private outcome(outsideRetention: number, overCap: number): IngestOutcome {
    const reasons: string[] = [];
    if (overCap > 0) {
      this.deps.onDropped?.('daily_cap', overCap);
      reasons.push(`${overCap} past the agent's daily cap of ${this.deps.settings.spansPerAgentPerDay} spans (TRACE_SPANS_PER_AGENT_PER_DAY)`);
    }
    if (outsideRetention > 0) {
      this.deps.onDropped?.('outside_retention', outsideRetention);
      reasons.push(`${outsideRetention} starting outside the days kept (TRACE_RETENTION_DAYS=${this.deps.settings.retentionDays} before today to tomorrow, UTC)`);
    }
    const rejectedSpans = overCap + outsideRetention;
    return rejectedSpans === 0 ? { rejectedSpans } : { rejectedSpans, errorMessage: `spans refused: ${reasons.join('; ')}` };
  }
}

/** What newly stored model calls add to the month's usage: tokens, the cost of those priced, and how many had no price. */
function modelUseOf(calls: StoredModelCall[]): ModelUse {
  return {
    inputTokens: calls.reduce((sum, call) => sum + call.inputTokens, 0),
    outputTokens: calls.reduce((sum, call) => sum + call.outputTokens, 0),
    costUsd: calls.reduce((sum, call) => sum + (call.costUsd ?? 0), 0),
    unpricedCalls: calls.filter((call) => call.costUsd === null).length,
  };
}
