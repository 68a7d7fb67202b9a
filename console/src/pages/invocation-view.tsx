import { useEffect, useRef, useState } from 'preact/hooks';
import { api, messageOf } from '../api.js';
import { formatCost, formatMs, formatTokens, InvocationStatus, invocationTokens, When } from '../invocation-figures.js';
import type { InvocationDetail, InvocationSpan } from '../types.js';
import { waterfallRows, type WaterfallRow } from '../waterfall.js';

/** One invocation: its figures, then its spans as a waterfall. The heading takes the focus once it is shown. */
export function InvocationView({ agentId, invocationId, onBack }: { agentId: string; invocationId: string; onBack: () => void }) {
  const [found, setFound] = useState<InvocationDetail | null>(null);
  const [error, setError] = useState('');
  const heading = useRef<HTMLHeadingElement>(null);

  useEffect(() => {
    api<InvocationDetail>('GET', `/agents/${agentId}/invocations/${encodeURIComponent(invocationId)}`).then(setFound, (caught) => setError(messageOf(caught)));
  }, [agentId, invocationId]);
  useEffect(() => heading.current?.focus(), [found !== null]);

  const back = <button type="button" class="invocation-back" onClick={onBack}>Back to invocations</button>;
  if (!found) return <div>{back}{error ? <p role="alert" class="error">{error}</p> : <p>Loading…</p>}</div>;
  const { invocation, spans } = found;
  return (
    <section class="invocation" aria-labelledby="invocation-heading">
      {back}
      <h2 id="invocation-heading" tabIndex={-1} ref={heading}>Invocation <span class="url">{invocation.invocation_id}</span></h2>
      <dl class="invocation-facts">
        <dt>Started</dt><dd><When at={invocation.started_at} /></dd>
        <dt>Status</dt><dd><InvocationStatus status={invocation.status} /></dd>
        <dt>Took</dt><dd>{formatMs(invocation.duration_ms)}</dd>
        <dt>Session</dt><dd class="url">{invocation.session_id ?? 'none'}</dd>
        <dt>Models</dt><dd>{invocation.models.join(', ') || 'none'}</dd>
        <dt>Tokens</dt><dd>{invocationTokens(invocation)}</dd>
        <dt>Cost</dt><dd>{formatCost(invocation.cost_usd)}</dd>
        <dt>Tool calls</dt><dd>{invocation.tool_calls}</dd>
      </dl>
      <Waterfall spans={spans} />
    </section>
  );
}

/** Each span under its parent, with a bar placed and sized on the invocation's time. */
function Waterfall({ spans }: { spans: InvocationSpan[] }) {
  return (
    <div class="table-scroll">
      <table aria-label="Spans" class="waterfall">
        <thead><tr><th scope="col">Span</th><th scope="col" class="waterfall-time">Timeline</th><th scope="col">Took</th><th scope="col">Details</th></tr></thead>
        <tbody>{waterfallRows(spans).map((row) => <SpanRow key={`${row.span.span_id}-${row.span.start_time}`} row={row} />)}</tbody>
      </table>
    </div>
  );
}

function SpanRow({ row }: { row: WaterfallRow }) {
  const { span, depth, parent } = row;
  const failed = span.status === 'error';
  const operation = typeof span.attributes['gen_ai.operation.name'] === 'string' ? span.attributes['gen_ai.operation.name'] : '';
  const facts = spanFacts(span);
  const timing = `${span.name}: starts at +${formatMs(row.startMs)}, takes ${formatMs(span.duration_ms)}${failed ? ', failed' : ''}`;
  return (
    <tr class={failed ? 'span-error' : undefined} data-span={span.span_id} data-depth={depth}>
      <td class="span-name" style={{ paddingLeft: `${0.6 + depth * 1.5}rem` }}>
        {depth > 0 && <span aria-hidden="true" class="note">└ </span>}
        {span.name}
        {parent && <span class="visually-hidden">, under {parent.name}</span>}
        {operation && !span.name.startsWith(operation) && <span class="note"> ({operation})</span>}
      </td>
      <td class="waterfall-time">
        <div class="waterfall-track">
          <div class="waterfall-bar" role="img" aria-label={timing} title={timing} style={{ left: `${row.leftPercent}%`, width: `${row.widthPercent}%` }} />
        </div>
      </td>
      <td class="span-took">{formatMs(span.duration_ms)}</td>
      <td>
        {facts.join(' · ')}
        {failed && <strong class="span-failed">{facts.length ? ' · ' : ''}error{span.status_message ? `: ${span.status_message}` : ''}</strong>}
      </td>
    </tr>
  );
}

/** What a span's GenAI attributes say worth a glance: a model call's model, tokens and cost, a tool call's tool. */
function spanFacts(span: InvocationSpan): string[] {
  const attributes = span.attributes;
  const model = attributes['gen_ai.response.model'] ?? attributes['gen_ai.request.model'];
  const facts: string[] = [];
  if (model !== undefined) facts.push(String(model));
  if (attributes['gen_ai.usage.input_tokens'] !== undefined || attributes['gen_ai.usage.output_tokens'] !== undefined) {
    facts.push(`${formatTokens(attributes['gen_ai.usage.input_tokens'] ?? 0, attributes['gen_ai.usage.output_tokens'] ?? 0)} tokens`);
  }
  if (span.cost_usd !== null) facts.push(formatCost(span.cost_usd));
  if (attributes['gen_ai.tool.name'] !== undefined) facts.push(`tool ${String(attributes['gen_ai.tool.name'])}`);
  return facts;
}
