import type { Knex } from 'knex';
import type { SpanRow } from '../domain/trace-spans.js';
import { pageOf, type Page } from './page.js';

/** One invocation's summary (migration 012, `trace_invocations`). */
export interface InvocationRow {
  agent_id: string;
  trace_id: string;
  day: string;
  started_at: Date;
  duration_ms: number;
  status: 'ok' | 'error';
  session_id: string | null;
  models: string[];
  input_tokens: string;
  output_tokens: string;
  /** numeric: text from node-postgres, null when a model call had no known price. */
  cost_usd: string | null;
  tool_calls: number;
  span_count: number;
}

export interface InvocationFilter {
  status?: 'ok' | 'error';
  sessionId?: string;
  model?: string;
  from?: Date;
  to?: Date;
}

/** A model call's figures as stored: cost null when its model had no price. */
export interface StoredModelCall {
  inputTokens: number;
  outputTokens: number;
  costUsd: number | null;
}

/** Rows per INSERT: 17 parameters each stays far below Postgres's 65,535 per statement. */
const INSERT_BATCH = 1000;

/** First key of the advisory locks that make one trace's ingests take turns (agent-sessions.ts has "ags", loop-locks.ts "agn"). */
const TRACE_LOCK_NAMESPACE = 0x61_67_74; // "agt"

/**
 * The summary of each named trace from all its stored spans, written over the one before
 * when it covers at least as many spans (a recompute that started before another batch's
 * spans were committed must not undo the newer one). An invocation's day is kept from its
 * first write; status is error when any span is; cost is null when any model call's is.
 */
const SUMMARISE_SQL = `
  WITH figures AS (
    SELECT trace_id,
      min(start_time) AS started_at,
      EXTRACT(EPOCH FROM max(end_time) - min(start_time)) * 1000 AS duration_ms,
      CASE WHEN bool_or(status_code = 2) THEN 'error' ELSE 'ok' END AS status,
      (array_agg(attributes->>'gen_ai.conversation.id' ORDER BY (operation = 'invoke_agent') DESC NULLS LAST, start_time)
        FILTER (WHERE attributes->>'gen_ai.conversation.id' IS NOT NULL))[1] AS session_id,
      COALESCE(array_agg(DISTINCT model) FILTER (WHERE model IS NOT NULL), '{}') AS models,
      COALESCE(sum(input_tokens), 0) AS input_tokens,
      COALESCE(sum(output_tokens), 0) AS output_tokens,
      CASE WHEN bool_or(operation = 'chat' AND cost_usd IS NULL) THEN NULL ELSE COALESCE(sum(cost_usd), 0) END AS cost_usd,
      count(*) FILTER (WHERE operation = 'execute_tool') AS tool_calls,
      count(*) AS span_count
    FROM trace_spans WHERE agent_id = :agent AND trace_id = ANY(:traces)
    GROUP BY trace_id
  )
  INSERT INTO trace_invocations AS i (agent_id, trace_id, day, started_at, duration_ms, status, session_id, models, input_tokens, output_tokens, cost_usd, tool_calls, span_count)
  SELECT :agent, f.trace_id,
    COALESCE((SELECT max(day) FROM trace_invocations e WHERE e.agent_id = :agent AND e.trace_id = f.trace_id), (f.started_at AT TIME ZONE 'UTC')::date),
    f.started_at, f.duration_ms, f.status, f.session_id, f.models, f.input_tokens, f.output_tokens, f.cost_usd, f.tool_calls, f.span_count
  FROM figures f
  ON CONFLICT (agent_id, trace_id, day) DO UPDATE SET
    started_at = excluded.started_at, duration_ms = excluded.duration_ms, status = excluded.status, session_id = excluded.session_id,
    models = excluded.models, input_tokens = excluded.input_tokens, output_tokens = excluded.output_tokens, cost_usd = excluded.cost_usd,
    tool_calls = excluded.tool_calls, span_count = excluded.span_count
  WHERE i.span_count <= excluded.span_count`;

/** Agents' traces (migration 012): spans as they came, and one summary per invocation. Every method names the agent. */
export class TraceRepository {
  constructor(private readonly db: Knex) {}

  /**
   * Stores the spans; one sent again (an exporter's retry) is kept once. Every row's day
   * must have its partition. Returns the model-call figures of the spans stored now, not
   * of those already there, so that usage counts each model call once.
   */
  async insertSpans(rows: SpanRow[]): Promise<StoredModelCall[]> {
    const stored: StoredModelCall[] = [];
    for (let start = 0; start < rows.length; start += INSERT_BATCH) {
      const batch = rows.slice(start, start + INSERT_BATCH).map((row) => ({ ...row, attributes: JSON.stringify(row.attributes) }));
      const inserted = await this.db('trace_spans').insert(batch).onConflict(['agent_id', 'trace_id', 'span_id', 'start_time']).ignore()
        .returning(['operation', 'input_tokens', 'output_tokens', 'cost_usd']) as { operation: string | null; input_tokens: string | null; output_tokens: string | null; cost_usd: string | null }[];
      for (const row of inserted) {
        if (row.operation !== 'chat') continue;
        stored.push({ inputTokens: Number(row.input_tokens ?? 0), outputTokens: Number(row.output_tokens ?? 0), costUsd: row.cost_usd === null ? null : Number(row.cost_usd) });
      }
    }
    return stored;
  }

  /**
   * The turn of each named trace of the agent, held until the transaction ends. Ingests of
   * one trace then take turns: each summary is computed from every span stored before it.
   * Without them, two batches of one invoke stored at once (the runtime's and the edge's)
   * each summed what it saw, neither the other's uncommitted spans, and the summary kept
   * was one of the two. Taken in one order, so two ingests sharing traces cannot deadlock.
   */
  async takeTurns(agentId: string, traceIds: string[]): Promise<void> {
    if (traceIds.length === 0) return;
    await this.db.raw(
      'SELECT pg_advisory_xact_lock(?, hashtext(turn)) FROM (SELECT turn FROM unnest(?::text[]) AS turn ORDER BY turn) AS turns',
      [TRACE_LOCK_NAMESPACE, traceIds.map((traceId) => `${agentId}/${traceId}`)],
    );
  }

  /** Recomputes the summaries of the agent's named traces from their spans. */
  async summarise(agentId: string, traceIds: string[]): Promise<void> {
    if (traceIds.length > 0) await this.db.raw(SUMMARISE_SQL, { agent: agentId, traces: traceIds });
  }

  /** One page of the agent's invocations matching `filter`, the newest first. */
  async listInvocations(agentId: string, filter: InvocationFilter, offset: number, limit: number): Promise<Page<InvocationRow>> {
    const query = this.db<InvocationRow>('trace_invocations').where({ agent_id: agentId });
    if (filter.status) query.where({ status: filter.status });
    if (filter.sessionId) query.where({ session_id: filter.sessionId });
    if (filter.model) query.whereRaw('? = ANY(models)', [filter.model]);
    if (filter.from) query.where('started_at', '>=', filter.from);
    if (filter.to) query.where('started_at', '<', filter.to);
    return pageOf(query, [{ column: 'started_at', order: 'desc' }, { column: 'trace_id', order: 'asc' }], offset, limit);
  }

  async findInvocation(agentId: string, traceId: string): Promise<InvocationRow | undefined> {
    return this.db<InvocationRow>('trace_invocations').where({ agent_id: agentId, trace_id: traceId }).orderBy('day', 'desc').first();
  }

  /** The trace's spans in the order they started. */
  async spansOf(agentId: string, traceId: string): Promise<SpanRow[]> {
    return this.db<SpanRow>('trace_spans').where({ agent_id: agentId, trace_id: traceId }).orderBy([{ column: 'start_time' }, { column: 'span_id' }]);
  }
}
