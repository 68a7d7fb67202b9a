import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigError } from '../src/config-error.js';
import { loadSettings } from '../src/settings.js';
import { SpanExporter } from '../src/tracing/span-exporter.js';
import { createInvokeTracer } from '../src/tracing/spans.js';
import { parseTraceParent } from '../src/tracing/trace-context.js';
import { postInvokeStream } from './helpers/event-stream.js';
import { FakeAgentServices } from './helpers/fake-agent-services.js';
import { FakeProvider, type FakeProviderName } from './helpers/fake-provider.js';
import { EXAMPLE_TEMPLATE_DIR, getJson, platformEnv, postInvoke, startRuntime, TEST_KEYS, waitFor, type TestRuntime } from './helpers/runtime.js';
import { scratchDirectory } from './helpers/scratch-directory.js';

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const EDGE_SPAN_ID = '00f067aa0ba902b7';
const INPUT = 'Please add these two numbers, marker-7f3a';
// Distinctive enough that finding them anywhere in an export means the content leaked.
const TOOL_ARGS = { a: 1234567, b: 7654321 };
const TOOL_SUM = '8888888';
const ANSWER = 'The sum is eight million, marker-answer-91c2.';

/** Attributes of an OTLP JSON span as a plain object, each value decoded from its AnyValue. */
function attributesOf(span: any): Record<string, unknown> {
  const decode = (value: any): unknown => {
    if ('stringValue' in value) return value.stringValue;
    if ('intValue' in value) return Number(value.intValue);
    if ('doubleValue' in value) return value.doubleValue;
    if ('boolValue' in value) return value.boolValue;
    return value.arrayValue.values.map(decode);
  };
  return Object.fromEntries(span.attributes.map((attribute: any) => [attribute.key, decode(attribute.value)]));
}

describe('traces per invoke (OTLP/HTTP JSON to agent services)', () => {
  let fake: FakeProvider;
  let services: FakeAgentServices;
  let tokenFile: string;
  let runtime: TestRuntime | undefined;

  const start = async (provider: FakeProviderName, extra: Record<string, string> = {}) => {
    runtime = await startRuntime(
      platformEnv(fake, provider, { PLATFORM_TEMPLATE_DIR: EXAMPLE_TEMPLATE_DIR, AGENT_SERVICES_URL: services.url, AGENT_SERVICES_TOKEN_FILE: tokenFile, ...extra }),
    );
    return runtime;
  };
  const scriptToolThenAnswer = () => fake.reply({ toolCalls: [{ name: 'add', args: TOOL_ARGS }] }, { text: ANSWER });
  const tracesOf = async (url: string) => (await getJson(`${url}/`)).body.traces;

  before(async () => {
    fake = await FakeProvider.start();
  });
  beforeEach(async () => {
    services = await FakeAgentServices.start(['trace-token-1']);
    tokenFile = join(scratchDirectory('traces-token'), 'token');
    writeFileSync(tokenFile, 'trace-token-1\n');
  });
  afterEach(async () => {
    await runtime?.close();
    runtime = undefined;
    await services.close();
    fake.reset();
  });
  after(() => fake.close());

  it('sends one trace: the invoke, two model calls with their tokens and one tool call, continuing the edge trace', async () => {
    const { url } = await start('openai');
    scriptToolThenAnswer();

    const response = await postInvoke(url, { input: INPUT, session_id: 'conv-1' }, { traceparent: `00-${TRACE_ID}-${EDGE_SPAN_ID}-01`, 'x-request-id': 'req-abc' });

    assert.equal(response.status, 200);
    assert.deepEqual(response.body, { output: ANSWER, session_id: 'conv-1', agent_id: 'agt_test123' }, 'the v1 body is unchanged');
    await waitFor(() => services.spans().length >= 4, 'four spans');
    const spans = services.spans();
    assert.equal(spans.length, 4);

    const root = spans.find((span) => span.name === 'invoke_agent test agent');
    const chats = spans.filter((span) => span.name === 'chat gpt-4o');
    const tools = spans.filter((span) => span.name === 'execute_tool add');
    assert.ok(root, 'the root span');
    assert.equal(chats.length, 2);
    assert.equal(tools.length, 1);

    // Continued: the edge's trace id, its span as the root's parent, every other span under the root.
    assert.ok(spans.every((span) => span.traceId === TRACE_ID));
    assert.equal(root.parentSpanId, EDGE_SPAN_ID);
    for (const child of [...chats, ...tools]) assert.equal(child.parentSpanId, root.spanId);
    assert.equal(new Set(spans.map((span) => span.spanId)).size, 4);
    assert.ok(spans.every((span) => /^[0-9a-f]{16}$/.test(span.spanId)));
    assert.equal(response.headers.get('traceparent'), `00-${TRACE_ID}-${root.spanId}-01`);

    assert.equal(root.kind, 2);
    assert.deepEqual(root.status, { code: 1 });
    assert.deepEqual(attributesOf(root), {
      'gen_ai.operation.name': 'invoke_agent',
      'gen_ai.agent.id': 'agt_test123',
      'gen_ai.agent.name': 'test agent',
      'platform.request_id': 'req-abc',
      'gen_ai.conversation.id': 'conv-1',
    });

    // In order of time, the tool call between the two model calls.
    const [first, second] = chats.sort((x, y) => Number(BigInt(x.startTimeUnixNano) - BigInt(y.startTimeUnixNano)));
    const tool = tools[0];
    assert.ok(BigInt(first.endTimeUnixNano) <= BigInt(tool.startTimeUnixNano));
    assert.ok(BigInt(tool.endTimeUnixNano) <= BigInt(second.startTimeUnixNano));
    assert.ok(BigInt(root.startTimeUnixNano) <= BigInt(first.startTimeUnixNano) && BigInt(second.endTimeUnixNano) <= BigInt(root.endTimeUnixNano));
    for (const [chat, finish] of [[first, 'tool_calls'], [second, 'stop']] as const) {
      assert.equal(chat.kind, 3);
      assert.deepEqual(chat.status, { code: 1 });
      assert.deepEqual(attributesOf(chat), {
        'gen_ai.operation.name': 'chat',
        'gen_ai.request.model': 'gpt-4o',
        'gen_ai.provider.name': 'openai',
        'gen_ai.request.temperature': 0,
        'gen_ai.response.model': 'gpt-4o',
        // What the fake provider reported for each call (usage: prompt_tokens 10, completion_tokens 5).
        'gen_ai.usage.input_tokens': 10,
        'gen_ai.usage.output_tokens': 5,
        'gen_ai.response.finish_reasons': [finish],
      });
      assert.deepEqual(chat.attributes.find((a: any) => a.key === 'gen_ai.usage.input_tokens').value, { intValue: '10' });
    }
    assert.equal(tool.kind, 1);
    assert.deepEqual(tool.status, { code: 1 });
    const toolAttributes = attributesOf(tool);
    assert.match(String(toolAttributes['gen_ai.tool.call.id']), /^call_/);
    assert.deepEqual(toolAttributes, {
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': 'add',
      'gen_ai.tool.call.id': toolAttributes['gen_ai.tool.call.id'],
      'gen_ai.tool.type': 'function',
    });

    const [exported] = services.traceExports;
    assert.equal(exported!.authorization, 'Bearer trace-token-1');
    assert.match(exported!.contentType ?? '', /^application\/json/);
    const resourceSpans = exported!.body.resourceSpans[0];
    assert.deepEqual(attributesOf(resourceSpans.resource), { 'service.name': 'test agent', 'platform.agent.id': 'agt_test123' });
    assert.deepEqual(resourceSpans.scopeSpans[0].scope, { name: 'agent-runtime' });

    // TRACE_CONTENT is off: none of the conversation, the tool's arguments or its result, and never a key or token.
    const sent = services.traceExports.map((entry) => entry.text).join('\n');
    for (const text of ['marker-7f3a', 'marker-answer-91c2', '1234567', '7654321', TOOL_SUM, TEST_KEYS.openai, 'You are a helpful assistant']) {
      assert.ok(!sent.includes(text), `the export must not contain ${text}`);
    }
    assert.deepEqual(await tracesOf(url), { enabled: true, spans_exported: 4, spans_dropped: 0 });
  });

  it('records messages, tool arguments and results with TRACE_CONTENT=true, still no key or token', async () => {
    const { url } = await start('openai', { TRACE_CONTENT: 'true' });
    scriptToolThenAnswer();

    assert.equal((await postInvoke(url, { input: INPUT })).status, 200);
    await waitFor(() => services.spans().length >= 4, 'four spans');

    const sent = services.traceExports.map((entry) => entry.text).join('\n');
    for (const text of ['marker-7f3a', 'marker-answer-91c2', '1234567', '7654321', TOOL_SUM]) assert.ok(sent.includes(text), `the export contains ${text}`);
    for (const secret of [TEST_KEYS.openai, 'trace-token-1']) assert.ok(!sent.includes(secret), 'no key or token');

    const spans = services.spans();
    const tool = attributesOf(spans.find((span) => span.name === 'execute_tool add'));
    assert.deepEqual(JSON.parse(String(tool['gen_ai.tool.call.arguments'])), TOOL_ARGS);
    assert.deepEqual(JSON.parse(String(tool['gen_ai.tool.call.result'])), { sum: 8888888 });
    const chats = spans.filter((span) => span.name === 'chat gpt-4o').map(attributesOf);
    const firstInput = JSON.parse(String(chats.find((chat) => String(chat['gen_ai.input.messages']).includes('marker-7f3a') && !String(chat['gen_ai.input.messages']).includes('tool_call'))!['gen_ai.input.messages']));
    assert.deepEqual(firstInput, [{ role: 'user', parts: [{ type: 'text', content: INPUT }] }]);
    const answer = chats.find((chat) => String(chat['gen_ai.output.messages']).includes('marker-answer'))!;
    assert.deepEqual(JSON.parse(String(answer['gen_ai.output.messages'])), [{ role: 'assistant', parts: [{ type: 'text', content: ANSWER }], finish_reason: 'stop' }]);
    assert.match(String(answer['gen_ai.input.messages']), /"type":"tool_call_response"/);
    assert.match(String(answer['gen_ai.system_instructions']), /helpful assistant/);
  });

  it('traces a streamed invoke the same way (anthropic), its token counts from the stream', async () => {
    const { url } = await start('anthropic');
    scriptToolThenAnswer();

    const { status, events } = await postInvokeStream(url, { input: INPUT });

    assert.equal(status, 200);
    assert.equal(events.at(-1)!.event, 'done');
    await waitFor(() => services.spans().length >= 4, 'four spans');
    const spans = services.spans();
    const root = spans.find((span) => span.name === 'invoke_agent test agent');
    const chats = spans.filter((span) => span.name === 'chat claude-sonnet-4-5').map(attributesOf);
    assert.equal(chats.length, 2);
    assert.equal(root.parentSpanId, undefined, 'without a traceparent the invoke starts a trace');
    assert.ok(spans.every((span) => span.traceId === root.traceId && (span === root || span.parentSpanId === root.spanId)));
    for (const chat of chats) {
      assert.equal(chat['gen_ai.provider.name'], 'anthropic');
      assert.equal(chat['gen_ai.usage.input_tokens'], 10);
      assert.equal(chat['gen_ai.usage.output_tokens'], 5);
    }
    assert.deepEqual(chats.map((chat) => chat['gen_ai.response.finish_reasons']).sort(), [['stop'], ['tool_calls']]);
    assert.equal(spans.filter((span) => span.name === 'execute_tool add').length, 1);
    assert.ok(!services.traceExports.some((entry) => entry.text.includes('marker-7f3a')));
  });

  it('marks a failed invoke and its model call as errors, naming only the error type', async () => {
    const { url } = await start('google');
    fake.reply({ status: 500 });

    const response = await postInvoke(url, { input: INPUT }, { traceparent: `00-${'0'.repeat(32)}-${EDGE_SPAN_ID}-01` });

    assert.equal(response.status, 502);
    await waitFor(() => services.spans().length >= 2, 'two spans');
    const spans = services.spans();
    const root = spans.find((span) => span.name === 'invoke_agent test agent');
    const chat = spans.find((span) => span.name === 'chat gemini-2.5-flash');
    assert.notEqual(root.traceId, '0'.repeat(32), 'an all-zero trace id is not continued');
    assert.equal(root.parentSpanId, undefined);
    assert.equal(response.headers.get('traceparent'), `00-${root.traceId}-${root.spanId}-01`);
    assert.equal(root.status.code, 2);
    assert.equal(attributesOf(root)['error.type'], 'PROVIDER_ERROR');
    assert.equal(chat.status.code, 2);
    assert.equal(attributesOf(chat)['error.type'], '500');
    assert.equal(attributesOf(chat)['gen_ai.provider.name'], 'gcp.gemini');
  });

  it('marks a failing tool call as an error, its message (which may quote the arguments) only with TRACE_CONTENT', async () => {
    for (const content of ['false', 'true']) {
      const { url } = await start('openai', { TRACE_CONTENT: content });
      fake.reply({ toolCalls: [{ name: 'add', args: { a: 'marker-arg-5d1e', b: 3 } }] }, { text: 'I could not add those.' });
      assert.equal((await postInvoke(url, { input: INPUT })).status, 200);
      await waitFor(() => services.spans().some((span) => span.name === 'execute_tool add'), 'the tool span');
      const tool = services.spans().find((span) => span.name === 'execute_tool add');
      assert.equal(tool.status.code, 2);
      assert.equal(attributesOf(tool)['error.type'], '_OTHER');
      if (content === 'false') {
        assert.equal(tool.status.message, undefined);
        assert.ok(!services.traceExports.some((entry) => entry.text.includes('marker-arg-5d1e')));
      } else {
        assert.match(tool.status.message, /add needs two numbers, got "marker-arg-5d1e"/);
      }
      await runtime!.close();
      runtime = undefined;
      services.traceExports.length = 0;
    }
  });

  it('answers promptly while the trace endpoint hangs, dropping and counting the spans', async () => {
    services.traces = { hang: true };
    const { url } = await start('openai', { RUNTIME_TRACE_EXPORT_TIMEOUT_MS: '2000' });

    assert.equal((await postInvoke(url, { input: INPUT })).status, 200);
    await waitFor(() => services.tracesHeld === 1, 'an export held by the endpoint');
    // While that export hangs, an invoke with a tool call answers as fast as ever.
    scriptToolThenAnswer();
    const startedAt = Date.now();
    const response = await postInvoke(url, { input: INPUT });
    assert.equal(response.status, 200);
    // Well under the export's 2,000 ms, which an invoke held behind the export would take; loose for a slow CI machine.
    assert.ok(Date.now() - startedAt < 1_500, `answered in ${Date.now() - startedAt} ms`);
    assert.equal(runtime!.tracing.stats()!.dropped, 0, 'the export is still waiting');
    await waitFor(() => runtime!.tracing.stats()!.dropped >= 2, 'the hung export to be dropped');
    assert.equal(services.traceExports.length, 0);
    const traces = await tracesOf(url);
    assert.equal(traces.enabled, true);
    assert.ok(traces.spans_dropped >= 2);
    const warnings = runtime!.logs.filter((line) => line['message'] === 'trace spans dropped');
    assert.equal(warnings.length, 1, 'one warning a minute at most');
    assert.match(String(warnings[0]!['reason']), /no answer within 2000 ms/);
  });

  it('drops and counts spans the endpoint refuses (503) or rejects in a partial success', async () => {
    services.traces = { status: 503 };
    const { url } = await start('openai');
    assert.equal((await postInvoke(url, { input: INPUT })).status, 200);
    await waitFor(() => runtime!.tracing.stats()!.dropped === 2, 'two dropped spans');

    services.traces = { accept: true, rejectedSpans: 1 };
    assert.equal((await postInvoke(url, { input: INPUT })).status, 200);
    await waitFor(() => services.traceExports.length === 1, 'an export');
    await waitFor(() => runtime!.tracing.stats()!.dropped === 3, 'the rejected span counted');
    assert.deepEqual(await tracesOf(url), { enabled: true, spans_exported: 1, spans_dropped: 3 });
    assert.match(runtime!.logText(), /"reason":"HTTP 503"/);
  });

  it('sends nothing with RUNTIME_TRACES=off', async () => {
    const { url } = await start('openai', { RUNTIME_TRACES: 'off' });
    const response = await postInvoke(url, { input: INPUT });
    assert.equal(response.status, 200);
    assert.equal(response.headers.get('traceparent'), null);
    assert.deepEqual(await tracesOf(url), { enabled: false });
    await new Promise((resolve) => setTimeout(resolve, 1200));
    assert.equal(services.traceExports.length, 0);
  });
});

describe('trace pieces', () => {
  it('reads RUNTIME_TRACES and TRACE_CONTENT, refusing other values by name', () => {
    assert.deepEqual(loadSettings({}).traces, { enabled: true, recordContent: false, maxQueuedSpans: 2048, exportTimeoutMs: 2000 });
    const set = loadSettings({ RUNTIME_TRACES: 'off', TRACE_CONTENT: 'true', RUNTIME_TRACE_BUFFER_SPANS: '16', RUNTIME_TRACE_EXPORT_TIMEOUT_MS: '500' }).traces;
    assert.deepEqual(set, { enabled: false, recordContent: true, maxQueuedSpans: 16, exportTimeoutMs: 500 });
    assert.throws(() => loadSettings({ TRACE_CONTENT: 'yes' }), (error: Error) => error instanceof ConfigError && /TRACE_CONTENT="yes" is invalid: it must be true or false/.test(error.message));
    assert.throws(() => loadSettings({ RUNTIME_TRACES: 'false' }), /RUNTIME_TRACES="false" is invalid: it must be on or off/);
    assert.throws(() => loadSettings({ RUNTIME_TRACE_BUFFER_SPANS: '0' }), /RUNTIME_TRACE_BUFFER_SPANS="0" is invalid/);
  });

  it('continues only a valid version-00 traceparent', () => {
    assert.deepEqual(parseTraceParent(`00-${TRACE_ID}-${EDGE_SPAN_ID}-01`), { traceId: TRACE_ID, spanId: EDGE_SPAN_ID });
    assert.deepEqual(parseTraceParent(`00-${TRACE_ID}-${EDGE_SPAN_ID}-00`), { traceId: TRACE_ID, spanId: EDGE_SPAN_ID });
    for (const invalid of [
      undefined,
      '',
      `01-${TRACE_ID}-${EDGE_SPAN_ID}-01`,
      `00-${'0'.repeat(32)}-${EDGE_SPAN_ID}-01`,
      `00-${TRACE_ID}-${'0'.repeat(16)}-01`,
      `00-${TRACE_ID.toUpperCase()}-${EDGE_SPAN_ID}-01`,
      `00-${TRACE_ID}-${EDGE_SPAN_ID}`,
      `00-${TRACE_ID.slice(1)}-${EDGE_SPAN_ID}-01`,
      [`00-${TRACE_ID}-${EDGE_SPAN_ID}-01`],
    ]) {
      assert.equal(parseTraceParent(invalid), undefined, String(invalid));
    }
  });

  const exporterSending = (requests: string[], warnings: unknown[], extra: { maxQueuedSpans?: number; maxBodyBytes?: number }) =>
    new SpanExporter({
      url: 'http://receiver/v1/traces',
      token: { current: async () => 'token', reload: async () => 'token' },
      fetch: async (_input, init) => {
        requests.push(String(init?.body));
        return new Response('{}', { status: 200 });
      },
      logger: { debug() {}, info() {}, warn: (_message, fields) => warnings.push(fields), error() {} },
      clock: { now: () => 0 },
      origin: { serviceName: 'agent', agentId: 'agt_1' },
      maxQueuedSpans: extra.maxQueuedSpans ?? 100,
      timeoutMs: 1000,
      ...(extra.maxBodyBytes === undefined ? {} : { maxBodyBytes: extra.maxBodyBytes }),
    });

  it('sends a batch too large for one request in parts, and drops a span too large alone', async () => {
    const requests: string[] = [];
    const warnings: unknown[] = [];
    const exporter = exporterSending(requests, warnings, { maxBodyBytes: 2000 });
    const tracer = createInvokeTracer({ agentId: 'agt_1', agentName: 'agent', providerName: 'openai', recordContent: true, sink: exporter });
    for (let i = 0; i < 8; i++) tracer.startInvoke({ parent: undefined, requestId: 'r'.repeat(150) })!.root.end();
    tracer.startInvoke({ parent: undefined, requestId: undefined })!.root.set('gen_ai.input.messages', 'x'.repeat(3000)).end();

    await exporter.flush();

    assert.ok(requests.length > 1);
    assert.ok(requests.every((body) => Buffer.byteLength(body) <= 2000));
    const sent = requests.flatMap((body) => JSON.parse(body).resourceSpans[0].scopeSpans[0].spans);
    assert.equal(sent.length, 8);
    assert.deepEqual(exporter.stats(), { exported: 8, dropped: 1, queued: 0 });
  });

  it('drops and counts spans past the buffer, without sending anything until flushed', async () => {
    const requests: string[] = [];
    const warnings: unknown[] = [];
    const exporter = exporterSending(requests, warnings, { maxQueuedSpans: 3 });
    const tracer = createInvokeTracer({ agentId: 'agt_1', agentName: 'agent', providerName: 'openai', recordContent: false, sink: exporter });
    for (let i = 0; i < 5; i++) tracer.startInvoke({ parent: undefined, requestId: undefined })!.root.end();

    assert.deepEqual(exporter.stats(), { exported: 0, dropped: 2, queued: 3 });
    assert.equal(requests.length, 0);
    assert.equal(warnings.length, 1, 'a single warning within the minute');
    await exporter.flush();
    assert.deepEqual(exporter.stats(), { exported: 3, dropped: 2, queued: 0 });
    assert.equal(JSON.parse(requests[0]!).resourceSpans[0].scopeSpans[0].spans.length, 3);
  });
});
