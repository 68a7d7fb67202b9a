import type { Knex } from 'knex';
import { notFound } from '../domain/errors.js';
import { INVOCATION_ID } from '../domain/log-entry.js';
import type { SpanRow } from '../domain/trace-spans.js';
import { repositoriesOn } from '../repositories/index.js';
import type { InvocationRow } from '../repositories/traces.js';
import { SPAN_STATUSES, type InvocationDetail, type InvocationSpan, type InvocationSummary, type ListInvocationsQuery } from '../schemas/invocations.js';
import { assertAgentOf } from './agent-of-account.js';
import { pageEnvelope, pageWindow, type PageEnvelope } from './paging.js';
import type { Principal } from './principal.js';

/** What an agent's owner sees of its traces (issue 38): invocations, newest first, and one invocation's spans. */
export class InvocationService {
  constructor(private readonly db: Knex) {}

  async list(principal: Principal, agentId: string, query: ListInvocationsQuery): Promise<{ invocations: InvocationSummary[] } & PageEnvelope> {
    const repos = repositoriesOn(this.db);
    await assertAgentOf(repos, principal, agentId);
    const window = pageWindow(query);
    const filter = {
      status: query.status,
      sessionId: query.session_id,
      model: query.model,
      from: query.from === undefined ? undefined : new Date(query.from),
      to: query.to === undefined ? undefined : new Date(query.to),
    };
    const page = await repos.traces.listInvocations(agentId, filter, window.offset, window.pageSize);
    return { invocations: page.rows.map(summaryView), ...pageEnvelope(window, page.total) };
  }

  async get(principal: Principal, agentId: string, invocationId: string): Promise<InvocationDetail> {
    const repos = repositoriesOn(this.db);
    await assertAgentOf(repos, principal, agentId);
    // Ids are stored in lower case; anything that is not a trace id finds nothing.
    const traceId = invocationId.toLowerCase();
    const invocation = INVOCATION_ID.test(traceId) ? await repos.traces.findInvocation(agentId, traceId) : undefined;
    if (!invocation) throw notFound('Invocation');
    const spans = await repos.traces.spansOf(agentId, traceId);
    return { invocation: summaryView(invocation), spans: spans.map(spanView) };
  }
}

/** node-postgres gives numeric and bigint columns as text. */
const numberOrNull = (value: unknown): number | null => (value === null || value === undefined ? null : Number(value));

const summaryView = (row: InvocationRow): InvocationSummary => ({
  invocation_id: row.trace_id,
  started_at: row.started_at.toISOString(),
  duration_ms: Number(row.duration_ms),
  status: row.status,
  session_id: row.session_id,
  models: row.models,
  input_tokens: Number(row.input_tokens),
  output_tokens: Number(row.output_tokens),
  cost_usd: numberOrNull(row.cost_usd),
  tool_calls: row.tool_calls,
});

const spanView = (row: SpanRow): InvocationSpan => ({
  span_id: row.span_id,
  parent_span_id: row.parent_span_id,
  name: row.name,
  kind: row.kind,
  start_time: row.start_time.toISOString(),
  end_time: row.end_time.toISOString(),
  duration_ms: row.end_time.getTime() - row.start_time.getTime(),
  status: SPAN_STATUSES[row.status_code] ?? 'unset',
  status_message: row.status_message,
  cost_usd: numberOrNull(row.cost_usd),
  attributes: row.attributes,
});
