import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type { TestControl } from './control-harness.js';

/** One OTLP/HTTP JSON span (opentelemetry-proto's trace.proto as JSON), as a replica sends it. */
export interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  kind: number;
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  attributes: { key: string; value: { stringValue: string } | { intValue: string } }[];
  status: { code: number; message?: string };
}

/** An invoke's trace: its id (the invocation id), its root span's id and its spans. */
export interface InvokeTrace {
  traceId: string;
  rootId: string;
  spans: OtlpSpan[];
}

const hex = (bytes: number) => randomBytes(bytes).toString('hex');
const nanos = (at: number) => String(BigInt(at) * 1_000_000n);

/**
 * An invoke as the default runtime traces it (docs/contract.md, "Traces API v1"): the root
 * `invoke_agent` of 1000 ms, under it a model call of 400 ms at +10 ms, the tool call
 * `lookup` of 50 ms at +420 ms (failed when `toolError`), and a model call of 400 ms at
 * +480 ms; gpt-4o, 100 + 300 tokens in and 20 + 50 out.
 */
export function invokeTrace(options: { start: number; session?: string; toolError?: boolean }): InvokeTrace {
  const traceId = hex(16);
  const rootId = hex(8);
  const span = (name: string, spanId: string, parentSpanId: string, at: number, ms: number, values: Record<string, string | number>, error = false): OtlpSpan => ({
    traceId, spanId, parentSpanId, name, kind: 1,
    startTimeUnixNano: nanos(options.start + at),
    endTimeUnixNano: nanos(options.start + at + ms),
    attributes: Object.entries(values).map(([key, value]) => ({ key, value: typeof value === 'number' ? { intValue: String(value) } : { stringValue: value } })),
    status: error ? { code: 2, message: 'tool failed' } : { code: 1 },
  });
  const chat = (at: number, input: number, output: number) => span('chat gpt-4o', hex(8), rootId, at, 400, {
    'gen_ai.operation.name': 'chat', 'gen_ai.provider.name': 'openai', 'gen_ai.request.model': 'gpt-4o',
    'gen_ai.response.model': 'gpt-4o-2024-08-06', 'gen_ai.usage.input_tokens': input, 'gen_ai.usage.output_tokens': output,
  });
  return {
    traceId,
    rootId,
    spans: [
      span('invoke_agent', rootId, '', 0, 1000, { 'gen_ai.operation.name': 'invoke_agent', 'gen_ai.conversation.id': options.session ?? 'conv-1' }),
      chat(10, 100, 20),
      span('execute_tool lookup', hex(8), rootId, 420, 50, { 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': 'lookup' }, options.toolError),
      chat(480, 300, 50),
    ],
  };
}

/** Sends the traces in one POST /v1/traces to the agent services with a replica token of `agentId`, as a replica's exporter does. */
export async function sendTraces(control: TestControl, agentId: string, traces: InvokeTrace[]): Promise<void> {
  const spans = traces.flatMap((trace) => trace.spans);
  const response = await fetch(`${control.agentServicesUrl}/v1/traces`, {
    method: 'POST',
    headers: { authorization: `Bearer ${control.mintAgentToken(agentId)}`, 'content-type': 'application/json' },
    body: JSON.stringify({ resourceSpans: [{ resource: { attributes: [] }, scopeSpans: [{ scope: { name: 'agent-runtime' }, spans }] }] }),
  });
  const text = await response.text();
  assert.equal(response.status, 200, `POST /v1/traces: ${response.status} ${text}`);
  assert.deepEqual(JSON.parse(text), {}, 'every span taken');
}
