import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Counter } from 'prom-client';
import { SettingReader } from '../contract/settings-reader.js';
import { readTraceSettings } from '../control/config/trace-settings.js';
import { startControl, type ApiResponse, type TestControl } from './support/control-harness.js';
import { createAgent, expectError, expectStatus } from './support/control-api.js';
import { decodeExportResponse, encodeExport, startOtlpReceiver, type OtlpReceiver } from './support/otlp-receiver.js';
import { SecretBox } from '../control/crypto/secret-box.js';
import { jobSpecFor } from '../control/domain/job-spec.js';
import { scratchDirectory } from '../runtime-image/test/helpers/scratch-directory.js';

/**
 * Traces per invoke (issue 38), the control side: POST /v1/traces on the agent services
 * listener (OTLP/HTTP JSON) with a replica's token, stored in day partitions of Postgres
 * under the token's agent, capped per agent per day in Redis, priced by the model price
 * table, and read by the owner as invocations on the control API.
 */
describe('agent traces', () => {
  let control: TestControl;
  const CAP = 12;
  const RETENTION_DAYS = 3;
  const DAY_MS = 86_400_000;

  before(async () => {
    const dir = scratchDirectory('prices');
    const pricesFile = join(dir, 'prices.json');
    // Replaces the built-in anthropic prices only; openai keeps the defaults (gpt-4o: 2.5 in, 10 out per million).
    writeFileSync(pricesFile, JSON.stringify({ anthropic: { 'claude-test': { input: 1, output: 5 } } }));
    control = await startControl({ TRACE_SPANS_PER_AGENT_PER_DAY: String(CAP), TRACE_RETENTION_DAYS: String(RETENTION_DAYS), MODEL_PRICES_FILE: pricesFile });
  });
  after(async () => control?.close());

  /** POST /v1/traces as a replica sends it. */
  async function sendTraces(token: string, body: unknown, options: { contentType?: string; rawBody?: string } = {}): Promise<ApiResponse> {
    const response = await fetch(`${control.agentServicesUrl}/v1/traces`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': options.contentType ?? 'application/json' },
      body: options.rawBody ?? JSON.stringify(body),
    });
    const text = await response.text();
    return { status: response.status, body: text ? JSON.parse(text) : undefined, headers: response.headers };
  }

  async function agentWithToken() {
    const owner = await control.signUp();
    const agent = await createAgent(control, owner.token);
    return { owner, agent, token: control.mintAgentToken(agent.id) };
  }

  const hex = (bytes: number) => randomBytes(bytes).toString('hex');
  const nanos = (at: number) => String(BigInt(at) * 1_000_000n);
  const attribute = (key: string, value: string | number | string[]) => ({
    key,
    value: Array.isArray(value)
      ? { arrayValue: { values: value.map((item) => ({ stringValue: item })) } }
      : typeof value === 'number' ? { intValue: String(value) } : { stringValue: value },
  });

  interface SpanOptions {
    traceId: string;
    parentSpanId?: string;
    name: string;
    start: number;
    durationMs: number;
    attributes: Record<string, string | number | string[]>;
    error?: boolean;
  }

  const span = (options: SpanOptions, spanId = hex(8)) => ({
    traceId: options.traceId,
    spanId,
    parentSpanId: options.parentSpanId ?? '',
    name: options.name,
    kind: 1,
    startTimeUnixNano: nanos(options.start),
    endTimeUnixNano: nanos(options.start + options.durationMs),
    attributes: Object.entries(options.attributes).map(([key, value]) => attribute(key, value)),
    status: options.error ? { code: 2, message: 'tool failed' } : { code: 0 },
  });

  const request = (spans: unknown[]) => ({ resourceSpans: [{ resource: { attributes: [attribute('service.name', 'agent')] }, scopeSpans: [{ scope: { name: 'agent-runtime' }, spans }] }] });

  /** An invoke as the default runtime traces it: a root, two model calls and one tool call between them. */
  function invokeTrace(options: { start?: number; session?: string; provider?: string; model?: string; toolError?: boolean } = {}) {
    const traceId = hex(16);
    const rootId = hex(8);
    const start = options.start ?? control.clock.now().getTime();
    const provider = options.provider ?? 'openai';
    const model = options.model ?? 'gpt-4o';
    const chat = (at: number, input: number, output: number) => span({
      traceId, parentSpanId: rootId, name: `chat ${model}`, start: at, durationMs: 400,
      attributes: {
        'gen_ai.operation.name': 'chat', 'gen_ai.provider.name': provider, 'gen_ai.request.model': model,
        'gen_ai.response.model': `${model}-2024-08-06`, 'gen_ai.usage.input_tokens': input, 'gen_ai.usage.output_tokens': output,
        'gen_ai.response.finish_reasons': ['stop'],
      },
    });
    const spans = [
      chat(start + 10, 100, 20),
      span({ traceId, parentSpanId: rootId, name: 'execute_tool lookup', start: start + 420, durationMs: 50, attributes: { 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': 'lookup' }, error: options.toolError }),
      chat(start + 480, 300, 50),
      span({
        traceId, parentSpanId: hex(8), name: 'invoke_agent', start, durationMs: 1000,
        attributes: { 'gen_ai.operation.name': 'invoke_agent', 'gen_ai.conversation.id': options.session ?? 'conv-1', 'platform.request_id': 'req-1' },
      }, rootId),
    ];
    return { traceId, rootId, spans, body: request(spans) };
  }

  const listInvocations = (ownerToken: string, agentId: string, query = '') => control.request('GET', `/agents/${agentId}/invocations${query}`, { token: ownerToken });

  describe('ingest and the invocations API', () => {
    it('stores an invoke sent as OTLP/HTTP JSON and shows it with its tokens, models, tool calls and cost', async () => {
      const { owner, agent, token } = await agentWithToken();
      const trace = invokeTrace({ session: 'conv-42' });
      const sent = await sendTraces(token, trace.body);
      expectStatus(sent, 200);
      assert.deepEqual(sent.body, {});

      const list = await listInvocations(owner.token, agent.id);
      expectStatus(list, 200);
      assert.equal(list.body.total, 1);
      const [item] = list.body.invocations;
      assert.equal(item.invocation_id, trace.traceId);
      assert.equal(item.status, 'ok');
      assert.equal(item.session_id, 'conv-42');
      assert.deepEqual(item.models, ['gpt-4o-2024-08-06']);
      assert.equal(item.input_tokens, 400);
      assert.equal(item.output_tokens, 70);
      assert.equal(item.tool_calls, 1);
      assert.equal(item.duration_ms, 1000);
      // gpt-4o at the default prices, 2.5 and 10 USD per million tokens: (400 × 2.5 + 70 × 10) / 10^6.
      assert.ok(Math.abs(item.cost_usd - 0.0017) < 1e-12, `cost ${item.cost_usd}`);

      const one = await control.request('GET', `/agents/${agent.id}/invocations/${trace.traceId}`, { token: owner.token });
      expectStatus(one, 200);
      assert.deepEqual(one.body.invocation, item);
      assert.equal(one.body.spans.length, 4);
      const [root, ...children] = one.body.spans;
      assert.equal(root.span_id, trace.rootId);
      assert.equal(root.attributes['gen_ai.operation.name'], 'invoke_agent');
      assert.ok(children.every((child: any) => child.parent_span_id === trace.rootId));
      const calls = children.filter((child: any) => child.attributes['gen_ai.operation.name'] === 'chat');
      assert.deepEqual(calls.map((call: any) => call.attributes['gen_ai.usage.input_tokens']), [100, 300]);
      assert.deepEqual(calls[0].attributes['gen_ai.response.finish_reasons'], ['stop']);
      assert.ok(Math.abs(calls[0].cost_usd - (100 * 2.5 + 20 * 10) / 1e6) < 1e-12);
      assert.equal(calls[0].duration_ms, 400);
      assert.equal(children.find((child: any) => child.name === 'execute_tool lookup').cost_usd, null);
    });

    it('keeps a span sent twice once, and sums an invoke sent in several batches', async () => {
      const { owner, agent, token } = await agentWithToken();
      const trace = invokeTrace();
      expectStatus(await sendTraces(token, request(trace.spans.slice(0, 2))), 200);
      expectStatus(await sendTraces(token, request(trace.spans.slice(1))), 200);
      const [item] = (await listInvocations(owner.token, agent.id)).body.invocations;
      assert.equal(item.input_tokens, 400);
      assert.equal(item.tool_calls, 1);
      assert.equal((await control.request('GET', `/agents/${agent.id}/invocations/${trace.traceId}`, { token: owner.token })).body.spans.length, 4);
    });

    it('sums an invoke whose spans arrive in batches stored at once, as the runtime\'s and the edge\'s do', async () => {
      const { owner, agent, token } = await agentWithToken();
      // Each span of an invoke in a request of its own, all at once: every ingest must count
      // the spans of the others, whichever commits first. Three invokes, 12 requests and
      // spans, within this suite's TRACE_SPANS_PER_AGENT_PER_DAY and TRACE_REQUESTS_PER_SECOND.
      const traces = Array.from({ length: 3 }, () => invokeTrace());
      const answers = await Promise.all(traces.flatMap((trace) => trace.spans.map((one) => sendTraces(token, request([one])))));
      for (const answer of answers) expectStatus(answer, 200);
      const { invocations } = (await listInvocations(owner.token, agent.id)).body;
      assert.deepEqual(
        invocations.map((item: any) => [item.input_tokens, item.output_tokens, item.tool_calls]),
        traces.map(() => [400, 70, 1]),
        'each invoke summed from all four of its spans',
      );
      const usage = await control.request('GET', '/account/usage', { token: owner.token });
      const [use] = usage.body.period.model_usage.by_agent;
      assert.deepEqual([use.input_tokens, use.output_tokens], [1200, 210], 'each model call counted once');
    });

    it('keeps no span uncounted: when counting its model calls fails, nothing is stored, and the exporter\'s retry stores and counts them', async () => {
      const { owner, agent, token } = await agentWithToken();
      const trace = invokeTrace();
      // Postgres refuses this agent's usage row, as a failing write would, after its spans were inserted.
      await control.db.raw(`CREATE FUNCTION refuse_usage() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'usage refused by the test'; END $$`);
      await control.db.raw(`CREATE TRIGGER refuse_usage BEFORE INSERT ON model_usage FOR EACH ROW WHEN (NEW.agent_id = '${agent.id}') EXECUTE FUNCTION refuse_usage()`);
      try {
        const refused = await sendTraces(token, trace.body);
        assert.ok(refused.status >= 500, `the exporter is told to send again: ${refused.status}`);
      } finally {
        await control.db.raw('DROP TRIGGER refuse_usage ON model_usage');
        await control.db.raw('DROP FUNCTION refuse_usage()');
      }
      const [stored] = await control.db('trace_spans').where({ agent_id: agent.id }).count<{ count: string }[]>({ count: '*' });
      assert.equal(Number(stored!.count), 0, 'no span of the failed ingest was kept');

      expectStatus(await sendTraces(token, trace.body), 200);
      const usage = await control.request('GET', '/account/usage', { token: owner.token });
      const [use] = usage.body.period.model_usage.by_agent;
      assert.deepEqual([use.input_tokens, use.output_tokens], [400, 70], 'the retry counted both model calls');
      const [item] = (await listInvocations(owner.token, agent.id)).body.invocations;
      assert.deepEqual([item.input_tokens, item.output_tokens, item.tool_calls], [400, 70, 1]);
    });

    it('prices by MODEL_PRICES_FILE, and leaves the cost null (not 0) for a model without a price', async () => {
      const { owner, agent, token } = await agentWithToken();
      const priced = invokeTrace({ provider: 'anthropic', model: 'claude-test' });
      const unpriced = invokeTrace({ provider: 'anthropic', model: 'claude-3-5-sonnet', start: control.clock.now().getTime() + 5000 });
      expectStatus(await sendTraces(token, priced.body), 200);
      expectStatus(await sendTraces(token, unpriced.body), 200);
      const [newest, oldest] = (await listInvocations(owner.token, agent.id)).body.invocations;
      assert.equal(newest.invocation_id, unpriced.traceId);
      // The file's anthropic table replaced the built-in one: claude-3-5-sonnet has no price any more.
      assert.equal(newest.cost_usd, null);
      assert.ok(Math.abs(oldest.cost_usd - (400 * 1 + 70 * 5) / 1e6) < 1e-12);
    });

    it("adds the month's tokens and estimated cost per agent to GET /account/usage, each model call once", async () => {
      const { owner, agent, token } = await agentWithToken();
      const second = await createAgent(control, owner.token, { name: 'second' });
      const trace = invokeTrace();
      expectStatus(await sendTraces(token, trace.body), 200);
      // An exporter's retry of the same spans adds nothing.
      expectStatus(await sendTraces(token, trace.body), 200);
      expectStatus(await sendTraces(control.mintAgentToken(second.id), invokeTrace({ provider: 'anthropic', model: 'claude-3-5-sonnet' }).body), 200);
      const usage = await control.request('GET', '/account/usage', { token: owner.token });
      expectStatus(usage, 200);
      const byAgent = Object.fromEntries(usage.body.period.model_usage.by_agent.map((use: any) => [use.agent_id, use]));
      assert.deepEqual(byAgent[agent.id], { agent_id: agent.id, input_tokens: 400, output_tokens: 70, estimated_cost_usd: 0.0017, unpriced_model_calls: 0 });
      // No price for the second agent's model (MODEL_PRICES_FILE replaced anthropic's): its tokens count, its cost is not guessed.
      assert.deepEqual(byAgent[second.id], { agent_id: second.id, input_tokens: 400, output_tokens: 70, estimated_cost_usd: 0, unpriced_model_calls: 2 });
      const { by_agent: _, ...total } = usage.body.period.model_usage;
      assert.deepEqual(total, { input_tokens: 800, output_tokens: 140, estimated_cost_usd: 0.0017, unpriced_model_calls: 2 });
    });

    it("stores every span under the token's agent: another agent's token neither reads nor writes into it", async () => {
      const a = await agentWithToken();
      const b = await agentWithToken();
      const trace = invokeTrace();
      expectStatus(await sendTraces(a.token, trace.body), 200);
      // B sends spans of the same trace id: they are B's, and A's invocation is unchanged.
      expectStatus(await sendTraces(b.token, request(trace.spans.slice(0, 1))), 200);
      const ofA = (await listInvocations(a.owner.token, a.agent.id)).body.invocations;
      const ofB = (await listInvocations(b.owner.token, b.agent.id)).body.invocations;
      assert.equal(ofA[0].input_tokens, 400);
      assert.equal(ofB[0].invocation_id, trace.traceId);
      assert.equal(ofB[0].input_tokens, 100);
      // B's owner cannot reach A's agent or its invocation: 404, as for an agent that does not exist.
      expectError(await listInvocations(b.owner.token, a.agent.id), 404, 'NOT_FOUND');
      expectError(await control.request('GET', `/agents/${a.agent.id}/invocations/${trace.traceId}`, { token: b.owner.token }), 404, 'NOT_FOUND');
      expectError(await control.request('GET', `/agents/${a.agent.id}/invocations/${hex(16)}`, { token: a.owner.token }), 404, 'NOT_FOUND');
      expectError(await control.request('GET', `/agents/${a.agent.id}/invocations/not-a-trace`, { token: a.owner.token }), 404, 'NOT_FOUND');
    });

    it('filters by status, session, model and time range, newest first, paged', async () => {
      const { owner, agent, token } = await agentWithToken();
      const base = control.clock.now().getTime() - 60_000;
      const first = invokeTrace({ start: base, session: 's1' });
      const second = invokeTrace({ start: base + 10_000, session: 's2', toolError: true });
      const third = invokeTrace({ start: base + 20_000, session: 's1', model: 'gpt-4o-mini' });
      for (const trace of [first, second, third]) expectStatus(await sendTraces(token, trace.body), 200);
      const ids = async (query: string) => (await listInvocations(owner.token, agent.id, query)).body.invocations.map((item: any) => item.invocation_id);
      assert.deepEqual(await ids(''), [third.traceId, second.traceId, first.traceId]);
      assert.deepEqual(await ids('?status=error'), [second.traceId]);
      assert.deepEqual(await ids('?status=ok'), [third.traceId, first.traceId]);
      assert.deepEqual(await ids('?session_id=s1'), [third.traceId, first.traceId]);
      assert.deepEqual(await ids('?model=gpt-4o-mini-2024-08-06'), [third.traceId]);
      const at = (ms: number) => encodeURIComponent(new Date(ms).toISOString());
      assert.deepEqual(await ids(`?from=${at(base + 5_000)}&to=${at(base + 20_000)}`), [second.traceId]);
      const paged = await listInvocations(owner.token, agent.id, '?page=2&page_size=2');
      assert.deepEqual(paged.body.invocations.map((item: any) => item.invocation_id), [first.traceId]);
      assert.equal(paged.body.total, 3);
      assert.equal(paged.body.has_next, false);
      expectError(await listInvocations(owner.token, agent.id, '?status=maybe'), 422, 'VALIDATION_ERROR');
    });
  });

  describe('the wire contract', () => {
    it('answers a malformed body 400, a body of another type 415 and an oversized one 413, and an empty request {}', async () => {
      const { token } = await agentWithToken();
      expectError(await sendTraces(token, undefined, { rawBody: '{"resourceSpans": [' }), 400, 'INVALID_TRACES');
      const badSpan = { ...invokeTrace().spans[0], traceId: 'xyz' };
      expectError(await sendTraces(token, request([badSpan])), 400, 'INVALID_TRACES');
      expectError(await sendTraces(token, { resourceSpans: 'no' }), 400, 'INVALID_TRACES');
      expectError(await sendTraces(token, undefined, { rawBody: '\n\x0a\x12', contentType: 'application/x-protobuf' }), 400, 'INVALID_TRACES');
      expectError(await sendTraces(token, undefined, { rawBody: 'spans', contentType: 'text/plain' }), 415, 'UNSUPPORTED_MEDIA_TYPE');
      expectError(await sendTraces(token, undefined, { rawBody: JSON.stringify({ pad: 'x'.repeat(4 * 1024 * 1024) }) }), 413, 'PAYLOAD_TOO_LARGE');
      expectError(await sendTraces('not-a-token', invokeTrace().body), 401, 'UNAUTHENTICATED');
      const empty = await sendTraces(token, {});
      expectStatus(empty, 200);
      assert.deepEqual(empty.body, {});
    });

    it('takes OTLP/HTTP protobuf, what OpenTelemetry SDKs send by default, and answers in protobuf, partial success included', async () => {
      const { owner, agent, token } = await agentWithToken();
      const post = (body: unknown) => fetch(`${control.agentServicesUrl}/v1/traces`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/x-protobuf' },
        body: encodeExport(body),
      });
      const trace = invokeTrace();
      const accepted = await post(trace.body);
      assert.equal(accepted.status, 200);
      assert.equal(accepted.headers.get('content-type'), 'application/x-protobuf');
      assert.deepEqual(decodeExportResponse(new Uint8Array(await accepted.arrayBuffer())), {});
      const shown = await control.request('GET', `/agents/${agent.id}/invocations/${trace.traceId}`, { token: owner.token });
      expectStatus(shown, 200);
      assert.deepEqual([shown.body.invocation.input_tokens, shown.body.invocation.output_tokens, shown.body.invocation.tool_calls], [400, 70, 1]);
      assert.deepEqual(shown.body.spans.map((one: { span_id: string }) => one.span_id).sort(), trace.spans.map((one) => one.spanId).sort());
      const chat = shown.body.spans.find((one: { attributes: Record<string, unknown> }) => one.attributes['gen_ai.operation.name'] === 'chat');
      assert.deepEqual([chat.attributes['gen_ai.usage.input_tokens'], chat.attributes['gen_ai.response.finish_reasons'], chat.duration_ms], [100, ['stop'], 400]);

      const old = await post(invokeTrace({ start: control.clock.now().getTime() - (RETENTION_DAYS + 2) * DAY_MS }).body);
      assert.equal(old.status, 200);
      const { partialSuccess } = decodeExportResponse(new Uint8Array(await old.arrayBuffer()));
      assert.equal(partialSuccess.rejectedSpans, 4);
      assert.match(partialSuccess.errorMessage, /TRACE_RETENTION_DAYS/);
    });

    it("refuses, as partial success, spans starting before the days kept, and counts them", async () => {
      const { owner, agent, token } = await agentWithToken();
      const old = invokeTrace({ start: control.clock.now().getTime() - (RETENTION_DAYS + 2) * DAY_MS });
      const sent = await sendTraces(token, old.body);
      expectStatus(sent, 200);
      assert.equal(sent.body.partialSuccess.rejectedSpans, 4);
      assert.match(sent.body.partialSuccess.errorMessage, /TRACE_RETENTION_DAYS/);
      assert.equal((await listInvocations(owner.token, agent.id)).body.total, 0);
      assert.ok((await dropped('outside_retention')) >= 4);
    });
  });

  async function dropped(reason: string): Promise<number> {
    const counter = control.control.metrics.registry.getSingleMetric('agent_platform_trace_spans_dropped_total') as Counter | undefined;
    return (await counter!.get()).values.find((value) => value.labels.reason === reason)?.value ?? 0;
  }

  describe('the per-agent daily cap', () => {
    it("drops an agent's spans past TRACE_SPANS_PER_AGENT_PER_DAY and counts them; another agent is unaffected", async () => {
      const a = await agentWithToken();
      const b = await agentWithToken();
      const before = await dropped('daily_cap');
      const traces = [invokeTrace(), invokeTrace(), invokeTrace(), invokeTrace()];
      const answers = [];
      for (const trace of traces) answers.push(await sendTraces(a.token, trace.body));
      // 12 spans fit: three invokes of four; the fourth is refused whole.
      assert.deepEqual(answers.slice(0, 3).map((answer) => answer.body), [{}, {}, {}]);
      assert.equal(answers[3]!.body.partialSuccess.rejectedSpans, 4);
      assert.match(answers[3]!.body.partialSuccess.errorMessage, /daily cap of 12 spans/);
      assert.equal(await dropped('daily_cap'), before + 4);
      assert.equal((await listInvocations(a.owner.token, a.agent.id)).body.total, 3);
      const stored = await control.db('trace_spans').where({ agent_id: a.agent.id }).count<{ count: string }[]>({ count: '*' });
      assert.equal(Number(stored[0]!.count), CAP);
      // B's own day count is untouched by A's.
      expectStatus(await sendTraces(b.token, invokeTrace().body), 200);
      assert.equal((await listInvocations(b.owner.token, b.agent.id)).body.total, 1);
      // A new UTC day is a new count.
      control.clock.advance(DAY_MS);
      assert.deepEqual((await sendTraces(control.mintAgentToken(a.agent.id), invokeTrace().body)).body, {});
    });
  });

  describe('retention and deletion', () => {
    const partitionDays = async () => (await control.db.raw<{ rows: { name: string }[] }>(
      `SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'trace_spans'::regclass ORDER BY 1`,
    )).rows.map((row) => row.name);

    /** The owner's session after the clock moved days on: a fresh sign-in, as sessions last SESSION_TTL_MINUTES. */
    const signIn = async (email: string, password: string) => (await control.request('POST', '/auth/login', { body: { email, password } })).body.token as string;

    it('drops whole day partitions older than TRACE_RETENTION_DAYS and makes today and tomorrow ahead', async () => {
      const { owner, agent, token } = await agentWithToken();
      const ownerToken = () => signIn(owner.user.email, owner.password);
      const kept = invokeTrace();
      expectStatus(await sendTraces(token, kept.body), 200);
      const dayName = (ms: number) => `trace_spans_d${new Date(ms).toISOString().slice(0, 10).replaceAll('-', '')}`;
      const sentOn = control.clock.now().getTime();
      await control.control.loops.tracePartitions.runOnce();
      assert.ok((await partitionDays()).includes(dayName(sentOn + DAY_MS)), 'tomorrow is made ahead');
      // Still within the days kept: nothing goes.
      control.clock.advance(RETENTION_DAYS * DAY_MS);
      await control.control.loops.tracePartitions.runOnce();
      assert.equal((await listInvocations(await ownerToken(), agent.id)).body.total, 1);
      // One day more, and the day the spans were sent on is dropped, with its invocations.
      control.clock.advance(DAY_MS);
      await control.control.loops.tracePartitions.runOnce();
      const days = await partitionDays();
      assert.ok(!days.includes(dayName(sentOn)), `${dayName(sentOn)} dropped: ${days.join(', ')}`);
      assert.ok(days.includes(dayName(control.clock.now().getTime() + DAY_MS)));
      const signedIn = await ownerToken();
      assert.equal((await listInvocations(signedIn, agent.id)).body.total, 0);
      expectError(await control.request('GET', `/agents/${agent.id}/invocations/${kept.traceId}`, { token: signedIn }), 404, 'NOT_FOUND');
    });

    it("deletes an agent's traces with the agent", async () => {
      const { owner, agent, token } = await agentWithToken();
      expectStatus(await sendTraces(token, invokeTrace().body), 200);
      expectStatus(await control.request('DELETE', `/agents/${agent.id}`, { token: owner.token }), 204);
      for (const table of ['trace_spans', 'trace_invocations']) {
        const [row] = await control.db(table).where({ agent_id: agent.id }).count<{ count: string }[]>({ count: '*' });
        assert.equal(Number(row!.count), 0, table);
      }
      // Its token, still within its lifetime, stores nothing for an agent that is gone.
      expectError(await sendTraces(token, invokeTrace().body), 401, 'UNAUTHENTICATED');
    });
  });

  describe('deploy.trace_content', () => {
    it('is off by default and gives the containers TRACE_CONTENT=true only when on; deploy.env may not set it', async () => {
      const owner = await control.signUp();
      const plain = await createAgent(control, owner.token);
      assert.equal(plain.deploy.trace_content, false);
      // The job the orchestrator is handed for the agent as stored.
      const jobOf = async (agentId: string) =>
        jobSpecFor(await control.db('agents').where({ id: agentId }).first(), new SecretBox(control.config.masterKeys), { runtimeImage: 'runtime', urlOf: (slug) => slug });
      assert.equal((await jobOf(plain.id)).env.TRACE_CONTENT, undefined);
      const verbose = await createAgent(control, owner.token, { deploy: { trace_content: true } });
      assert.equal(verbose.deploy.trace_content, true);
      assert.equal((await jobOf(verbose.id)).env.TRACE_CONTENT, 'true');
      // A redeploy that leaves it out keeps it.
      const redeployed = await control.request('POST', `/agents/${verbose.id}/deploy`, { token: owner.token, body: { replicas: 2 } });
      expectStatus(redeployed, 202);
      assert.equal((await control.request('GET', `/agents/${verbose.id}`, { token: owner.token })).body.deploy.trace_content, true);
      expectError(
        await control.request('POST', '/agents', { token: owner.token, body: { name: 'sneaky', deploy: { env: [{ key: 'TRACE_CONTENT', value: 'true' }] } } }),
        422, 'VALIDATION_ERROR', ['body', 'deploy', 'env', 0, 'key'],
      );
      expectError(await control.request('POST', '/agents', { token: owner.token, body: { name: 'typed', deploy: { trace_content: 'yes' } } }), 422, 'VALIDATION_ERROR', ['body', 'deploy', 'trace_content']);
    });
  });

  describe('MODEL_PRICES_FILE', () => {
    it('is checked at start: every problem is named with its place, and a good file replaces the providers it gives', () => {
      const dir = scratchDirectory('prices');
      const file = (name: string, text: string) => (writeFileSync(join(dir, name), text), join(dir, name));
      const problems = (path: string) => {
        const read = new SettingReader({ MODEL_PRICES_FILE: path });
        readTraceSettings(read);
        return read.problems;
      };
      assert.match(problems(file('bad.json', '{ nope'))[0]!, /MODEL_PRICES_FILE: not JSON/);
      assert.match(problems(join(dir, 'missing.json'))[0]!, /MODEL_PRICES_FILE: cannot read/);
      const shapes = problems(file('shape.json', JSON.stringify({ openai: { 'gpt-x': { input: -1, output: 'ten' } }, anthropic: [] })));
      assert.deepEqual(shapes.map((problem) => problem.split(';')[0]), [
        'MODEL_PRICES_FILE: openai.gpt-x.input: must be a number of USD per million tokens, 0 or more',
        'MODEL_PRICES_FILE: openai.gpt-x.output: must be a number of USD per million tokens, 0 or more',
        'MODEL_PRICES_FILE: anthropic: must be an object of models',
      ]);
      const read = new SettingReader({ MODEL_PRICES_FILE: file('good.json', JSON.stringify({ openai: { 'gpt-x': { input: 1, output: 2 } } })) });
      const settings = readTraceSettings(read);
      assert.deepEqual(read.problems, []);
      assert.deepEqual(settings.prices.openai, { 'gpt-x': { input: 1, output: 2 } });
      assert.ok(settings.prices.anthropic!['claude-sonnet-4'], 'providers the file does not give keep the built-in prices');
      assert.equal(settings.retentionDays, 7);
      assert.equal(settings.spansPerAgentPerDay, 50_000);
    });
  });

  describe('TRACE_REQUESTS_PER_SECOND', () => {
    let limited: TestControl;
    before(async () => {
      limited = await startControl({ TRACE_REQUESTS_PER_SECOND: '3' });
    });
    after(async () => limited?.close());

    /** A POST /v1/traces that declares a 4 MiB body and sends none of it: answered only if the server does not wait for the body. */
    function headersOnly(token: string): Promise<{ status: number; retryAfter: string | undefined; body: string }> {
      return new Promise((resolve, reject) => {
        const url = new URL(`${limited.agentServicesUrl}/v1/traces`);
        const request = httpRequest({
          host: url.hostname, port: url.port, path: url.pathname, method: 'POST',
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'content-length': String(MAX_BODY) },
        }, (response) => {
          let body = '';
          response.setEncoding('utf8').on('data', (chunk: string) => (body += chunk)).on('end', () => {
            request.destroy();
            resolve({ status: response.statusCode!, retryAfter: response.headers['retry-after'], body });
          });
        });
        request.on('error', reject);
        request.flushHeaders();
        setTimeout(() => reject(new Error('no answer without the body: the limit waited for it')), 5_000).unref();
      });
    }
    const MAX_BODY = 4 * 1024 * 1024;

    it("refuses an agent's requests past the limit with 429 and Retry-After before reading their body; another agent is unaffected", async () => {
      const owner = await limited.signUp();
      const flooder = await createAgent(limited, owner.token);
      const other = await createAgent(limited, owner.token);
      const token = limited.mintAgentToken(flooder.id);
      const send = (agentToken: string) => fetch(`${limited.agentServicesUrl}/v1/traces`, {
        method: 'POST', headers: { authorization: `Bearer ${agentToken}`, 'content-type': 'application/json' }, body: '{}',
      });
      // The limiter counts by the control's clock, which stands still here: one second for all of these.
      for (let i = 0; i < 3; i += 1) assert.equal((await send(token)).status, 200, `request ${i + 1} of 3`);
      const refused = await headersOnly(token);
      assert.equal(refused.status, 429);
      assert.equal(JSON.parse(refused.body).code, 'TRACE_RATE_LIMITED');
      assert.ok(Number(refused.retryAfter) >= 1, `Retry-After ${refused.retryAfter}`);
      assert.equal((await send(limited.mintAgentToken(other.id))).status, 200, "another agent's traces go on");
      // The next second lets the agent in again.
      limited.clock.advance(1_000);
      assert.equal((await send(token)).status, 200);
    });
  });

  describe('forwarding to OTEL_EXPORTER_OTLP_ENDPOINT', () => {
    let forwarding: TestControl;
    let receiver: OtlpReceiver;
    const FORWARD_TIMEOUT_MS = 1500;

    before(async () => {
      receiver = await startOtlpReceiver();
      forwarding = await startControl({
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
        OTEL_EXPORTER_OTLP_HEADERS: 'x-api-key=s%20cret,x-team=agents',
        OTEL_EXPORTER_OTLP_TIMEOUT: String(FORWARD_TIMEOUT_MS),
        TRACE_FORWARD_QUEUE_REQUESTS: '1',
        TRACE_SPANS_PER_AGENT_PER_DAY: '4',
      });
    });
    after(async () => {
      await forwarding?.close();
      await receiver?.close();
    });

    const send = async (token: string, body: unknown) => {
      const response = await fetch(`${forwarding.agentServicesUrl}/v1/traces`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
      return { status: response.status, body: await response.json() };
    };
    /** An invoke as of this control's clock (the suite's other control has moved days on). */
    const now = () => ({ start: forwarding.clock.now().getTime() });
    const forwardDropped = async (reason: string) => {
      const counter = forwarding.control.metrics.registry.getSingleMetric('agent_platform_trace_forward_dropped_spans_total') as Counter | undefined;
      return (await counter!.get()).values.find((value) => value.labels.reason === reason)?.value ?? 0;
    };

    it('forwards the stored spans as OTLP/HTTP protobuf, the spec\'s default, with the configured headers, marked with their agent; spans past the cap are not', async () => {
      const owner = await forwarding.signUp();
      const agent = await createAgent(forwarding, owner.token);
      const token = forwarding.mintAgentToken(agent.id);
      const trace = invokeTrace(now());
      assert.deepEqual((await send(token, trace.body)).body, {});
      // Past the cap of 4: refused, so not forwarded either.
      assert.equal((await send(token, invokeTrace(now()).body)).body.partialSuccess.rejectedSpans, 4);
      await forwarding.control.services.traceIngest.forwarded();
      assert.equal(receiver.received.length, 1);
      const [first] = receiver.received;
      assert.equal(first!.path, '/v1/traces');
      assert.equal(first!.headers['content-type'], 'application/x-protobuf');
      assert.equal(first!.headers['x-api-key'], 's cret');
      assert.equal(first!.headers['x-team'], 'agents');
      const [resource] = first!.body.resourceSpans;
      assert.deepEqual(resource.resource.attributes.find((kv: any) => kv.key === 'platform.agent_id'), { key: 'platform.agent_id', value: { stringValue: agent.id } });
      assert.equal(resource.resource.attributes.find((kv: any) => kv.key === 'service.name').value.stringValue, 'agent');
      assert.deepEqual(resource.scopeSpans[0].spans, trace.spans, 'the spans as the replica sent them');
    });

    it('never holds up an ingest for a receiver that hangs: past the timeout and the queue, spans are dropped and counted', async () => {
      receiver.hang = true;
      try {
        const owner = await forwarding.signUp();
        const agent = await createAgent(forwarding, owner.token);
        const token = forwarding.mintAgentToken(agent.id);
        const [failedBefore, fullBefore] = [await forwardDropped('failed'), await forwardDropped('queue_full')];
        const started = Date.now();
        // One span each: the first is sent and hangs, the second waits in the queue of 1, the third finds it full.
        for (let i = 0; i < 3; i += 1) assert.deepEqual((await send(token, request([invokeTrace(now()).spans[0]]))).body, {});
        // Had an ingest waited for the receiver, the first alone would have taken the whole timeout.
        assert.ok(Date.now() - started < FORWARD_TIMEOUT_MS, `three ingests took ${Date.now() - started} ms, beside a receiver that does not answer`);
        await forwarding.control.services.traceIngest.forwarded();
        assert.equal(await forwardDropped('queue_full'), fullBefore + 1);
        assert.equal(await forwardDropped('failed'), failedBefore + 2, 'the two sent timed out after OTEL_EXPORTER_OTLP_TIMEOUT');
      } finally {
        receiver.hang = false;
      }
    });
  });
});
