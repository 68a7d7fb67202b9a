import type { Static } from '@sinclair/typebox';
import type { InvocationDetail, InvocationList, InvocationSpan, InvocationSummary } from '../../control/schemas/invocations.js';
import { pathSegment } from '../api-client.js';
import { command, group } from '../command.js';
import { resolveAgent } from '../resolve-agent.js';
import { details, printJson, table } from '../terminal.js';

const agentArg = { type: 'string', demandOption: true, describe: 'id, slug or unique name' } as const;

const cost = (usd: number | null) => (usd === null ? 'no price' : `$${usd.toFixed(6)}`);
const tokens = (invocation: InvocationSummary) => `${invocation.input_tokens} in, ${invocation.output_tokens} out`;

const invocationRow = (invocation: InvocationSummary) => [
  invocation.invocation_id, invocation.started_at, `${Math.round(invocation.duration_ms)} ms`, invocation.status, invocation.session_id ?? '',
  invocation.models.join(', '), tokens(invocation), cost(invocation.cost_usd), invocation.tool_calls,
];

const list = command({
  command: 'list <agent>',
  examples: [
    ['$0 invocations list support-bot', 'its traced invokes, newest first: duration, status, models, tokens and cost'],
    ['$0 invocations list support-bot --status error --since 2026-11-27T00:00:00Z', 'the failed ones since a time'],
  ],
  describe: "The agent's traced invokes, newest first: duration, status, session, models, tokens, estimated cost and tool calls",
  builder: (yargs) =>
    yargs
      .positional('agent', agentArg)
      .option('status', { type: 'string', choices: ['ok', 'error'], describe: 'only invocations that ended so' })
      .option('session', { type: 'string', describe: 'only this session id' })
      .option('model', { type: 'string', describe: 'only invocations that called this model' })
      .option('since', { type: 'string', describe: 'started at or after (ISO 8601)' })
      .option('until', { type: 'string', describe: 'started before (ISO 8601)' })
      .option('page', { type: 'number', default: 1, describe: 'which page, from 1' })
      .option('page-size', { type: 'number', default: 20, describe: 'invocations per page (1–100)' }),
  run: async (args, { api, terminal, json }) => {
    const agent = await resolveAgent(api, args.agent);
    const query = { page: args.page, page_size: args.pageSize, status: args.status, session_id: args.session, model: args.model, from: args.since, to: args.until };
    const page = await api.request<Static<typeof InvocationList>>('GET', `/agents/${agent.id}/invocations`, { query });
    if (json) return printJson(terminal, page);
    terminal.out(table(['invocation', 'started', 'took', 'status', 'session', 'models', 'tokens', 'cost', 'tools'], page.invocations.map(invocationRow), terminal.paint));
    if (page.total === 0) terminal.err(`${agent.name} has no traced invokes that match: replicas send traces once the platform runs agent services`);
    if (page.has_next) terminal.err(`${page.total} invocations; this is page ${page.page}: --page ${page.page + 1} for more`);
  },
});

/** Each span under its parent, indented by depth, in the order they started: a waterfall as text. */
function waterfall(spans: InvocationSpan[]): string[][] {
  const start = Math.min(...spans.map((span) => Date.parse(span.start_time)));
  const ids = new Set(spans.map((span) => span.span_id));
  const childrenOf = (parent: string | null) => spans.filter((span) => (span.parent_span_id !== null && ids.has(span.parent_span_id) ? span.parent_span_id : null) === parent);
  const rows: string[][] = [];
  const walk = (parent: string | null, depth: number) => {
    for (const span of childrenOf(parent)) {
      const figures = span.attributes['gen_ai.usage.input_tokens'] === undefined ? '' : `${String(span.attributes['gen_ai.usage.input_tokens'])} in, ${String(span.attributes['gen_ai.usage.output_tokens'])} out`;
      rows.push([`${depth === 0 ? '' : `${'│ '.repeat(depth - 1)}└ `}${span.name}`, `+${Date.parse(span.start_time) - start} ms`, `${Math.round(span.duration_ms)} ms`, span.status, figures, span.cost_usd === null ? '' : cost(span.cost_usd)]);
      walk(span.span_id, depth + 1);
    }
  };
  walk(null, 0);
  return rows;
}

const get = command({
  command: 'get <agent> <invocation>',
  examples: [['$0 invocations get support-bot 4bf92f3577b34da6a3ce929d0e0e4736', 'one invoke: its model and tool calls as a waterfall, with tokens and cost']],
  describe: 'One traced invoke: its summary, then its spans (the invoke, its model calls, its tool calls) as a waterfall',
  builder: (yargs) => yargs.positional('agent', agentArg).positional('invocation', { type: 'string', demandOption: true, describe: 'the invocation id, as `invocations list` shows it' }),
  run: async (args, { api, terminal, json }) => {
    const invocationId = pathSegment(args.invocation, 'invocation id');
    const agent = await resolveAgent(api, args.agent);
    const found = await api.request<InvocationDetail>('GET', `/agents/${agent.id}/invocations/${invocationId}`);
    if (json) return printJson(terminal, found);
    const { invocation } = found;
    terminal.out(details([
      ['invocation', invocation.invocation_id], ['started', invocation.started_at], ['took', `${Math.round(invocation.duration_ms)} ms`], ['status', invocation.status],
      ['session', invocation.session_id], ['models', invocation.models.join(', ')], ['tokens', tokens(invocation)], ['cost', cost(invocation.cost_usd)], ['tool calls', invocation.tool_calls],
    ], terminal.paint));
    terminal.out('');
    terminal.out(table(['span', 'at', 'took', 'status', 'tokens', 'cost'], waterfall(found.spans), terminal.paint));
  },
});

export const invocations = group('invocations', "An agent's traced invokes: model calls, tool calls, tokens and cost (kept TRACE_RETENTION_DAYS)", [list, get]);
