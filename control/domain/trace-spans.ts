/**
 * One span as stored (migration 012, `trace_spans`): its OTLP fields, its attributes as a
 * flat object, and the GenAI figures of a model call lifted out of them (OpenTelemetry
 * GenAI semantic conventions), priced by the price table when the span is taken in
 * (services/otlp-spans.ts).
 */
export interface SpanRow {
  agent_id: string;
  trace_id: string;
  span_id: string;
  parent_span_id: string | null;
  name: string;
  kind: number;
  start_time: Date;
  end_time: Date;
  status_code: number;
  status_message: string | null;
  /** `gen_ai.operation.name`: invoke_agent (the root), chat (a model call), execute_tool. */
  operation: string | null;
  model: string | null;
  input_tokens: number | null;
  output_tokens: number | null;
  cost_usd: number | null;
  attributes: Record<string, unknown>;
}

/** The UTC day a time falls in, as `YYYY-MM-DD`: what a partition is named and bounded by. */
export const utcDay = (at: Date): string => at.toISOString().slice(0, 10);

export const DAY_MS = 86_400_000;

/** The day `days` after `day` (before it when negative). */
export const dayAfter = (day: string, days: number): string => utcDay(new Date(Date.parse(`${day}T00:00:00Z`) + days * DAY_MS));
