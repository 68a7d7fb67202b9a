import type { InvocationSpan } from './types.js';

/** One span as the waterfall draws it: its depth under its parent and its bar, in percent of the invocation's time. */
export interface WaterfallRow {
  span: InvocationSpan;
  depth: number;
  parent: InvocationSpan | null;
  /** Milliseconds from the invocation's first start to the span's. */
  startMs: number;
  leftPercent: number;
  widthPercent: number;
}

/**
 * The spans in tree order, each under its parent (spans come in the order they started, so
 * siblings stay in that order), with bars placed on the invocation's time: from its first
 * span start to its last span end, which is the root span's when the trace is whole. A span
 * whose parent is not among them is drawn as a root. The spans come from the agent's replicas:
 * a span id seen twice or a parent loop draws each span once, never a walk without end.
 */
export function waterfallRows(spans: readonly InvocationSpan[]): WaterfallRow[] {
  if (spans.length === 0) return [];
  const first = Math.min(...spans.map((span) => Date.parse(span.start_time)));
  const last = Math.max(...spans.map((span) => Date.parse(span.end_time)));
  const extent = last - first;
  const ids = new Set(spans.map((span) => span.span_id));
  const children = new Map<string | null, InvocationSpan[]>();
  for (const span of spans) {
    const parent = span.parent_span_id !== null && ids.has(span.parent_span_id) ? span.parent_span_id : null;
    children.set(parent, [...(children.get(parent) ?? []), span]);
  }

  const rows: WaterfallRow[] = [];
  const drawn = new Set<InvocationSpan>();
  const draw = (span: InvocationSpan, depth: number, parent: InvocationSpan | null) => {
    if (drawn.has(span)) return;
    drawn.add(span);
    const startMs = Date.parse(span.start_time) - first;
    rows.push({
      span, depth, parent, startMs,
      leftPercent: extent > 0 ? (startMs / extent) * 100 : 0,
      widthPercent: extent > 0 ? Math.min(100, (span.duration_ms / extent) * 100) : 100,
    });
    for (const child of children.get(span.span_id) ?? []) draw(child, depth + 1, span);
  };
  for (const root of children.get(null) ?? []) draw(root, 0, null);
  // Spans only a parent loop reaches: drawn at the top rather than hidden.
  for (const span of spans) draw(span, 0, null);
  return rows;
}
