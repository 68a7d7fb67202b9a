import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { FakeProvider } from '../runtime-image/test/helpers/fake-provider.js';
import { TEST_KEYS } from '../runtime-image/test/helpers/runtime.js';
import { startControl, type TestControl } from './support/control-harness.js';
import { expectStatus } from './support/control-api.js';
import { startLocalEdgeStack, type LocalEdgeStack } from './support/local-edge-stack.js';
import { buildRuntimeImage, invokeThroughEdge, type ServedAgent as Agent } from './support/runtime-agents.js';
import { startOtlpReceiver, type OtlpReceiver } from './support/otlp-receiver.js';
import { waitFor } from './support/wait.js';

interface RegistryAttribute {
  id: string;
  type: string | { members: { value: string }[] };
}

/**
 * The GenAI attributes of OpenTelemetry's semantic conventions, from the registry file of
 * open-telemetry/semantic-conventions v1.41.0 (model/gen-ai/registry.yaml, copied unchanged
 * into test/fixtures; the deprecated names live in another file, so they are not here).
 */
function genAiRegistry(): Map<string, RegistryAttribute> {
  const file = join(import.meta.dirname, 'fixtures', 'semantic-conventions', 'gen-ai-registry.yaml');
  const groups = (parseYaml(readFileSync(file, 'utf8')) as { groups: { attributes?: RegistryAttribute[] }[] }).groups;
  return new Map(groups.flatMap((group) => group.attributes ?? []).map((attribute) => [attribute.id, attribute]));
}

/**
 * Issue 38 end to end: the default runtime image on podman with its example template's
 * tools, the model a fake provider speaking OpenAI's wire format, authz and the local edge
 * in front. One invoke calls the model, a tool, and the model again; the runtime sends its
 * spans to the agent services (OTLP/HTTP JSON, the replica's token), and the owner reads
 * the invocation from the control API with the fake provider's token counts and its cost.
 */
describe('traces of invokes (podman, the runtime image, the local edge)', function () {
  this.timeout(600_000);
  let control: TestControl;
  let edge: LocalEdgeStack;
  let provider: FakeProvider;
  let receiver: OtlpReceiver;
  let clockFollower: NodeJS.Timeout | undefined;

  before(async () => {
    const image = buildRuntimeImage();
    provider = await FakeProvider.start();
    // The operator's tracing backend: the platform forwards what it stores, protobuf by default.
    receiver = await startOtlpReceiver();
    control = await startControl({ RUNTIME_IMAGE: image, PODMAN_AGENT_HOST_PORTS: String(provider.port), OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url }, { orchestrate: true });
    // Replica tokens are minted by the wall clock (the driver's); the agent services verify them by this one.
    clockFollower = setInterval(() => control.clock.set(new Date()), 100);
    control.clock.set(new Date());
    edge = await startLocalEdgeStack(control, { authzRedisTimeoutMs: 2_000 });
  });
  after(async () => {
    clearInterval(clockFollower);
    await edge?.close();
    await control?.close();
    await provider?.close();
    await receiver?.close();
  });

  const envOf = (version: string) => [
    { key: 'OPENAI_BASE_URL', value: provider.baseUrl('openai', 'host.containers.internal') },
    { key: 'PLATFORM_TEMPLATE_DIR', value: '/app/templates/example' },
    { key: 'VERSION', value: version },
  ];

  async function deployed(agent: Agent, version: number): Promise<void> {
    await waitFor(`version ${version} serving`, async () => {
      const [newest] = (await control.request('GET', `/agents/${agent.id}/deployments`, { token: agent.token })).body.deployments;
      if (newest?.status === 'failed') throw new Error(`deployment failed: ${newest.error}`);
      return newest?.status === 'succeeded' && newest.agent_version === version ? true : undefined;
    }, 180_000, 250);
  }

  /** The invoke's trace id, from the runtime's answer; the answer's x-request-id too. */
  async function invoke(agent: Agent, input: string, headers: Record<string, string> = {}): Promise<{ traceId: string; requestId: string }> {
    const answer = await invokeThroughEdge(edge, agent, { input }, headers);
    // The runtime answers with its root span's traceparent: 00-<trace id>-<span id>-01.
    const traceparent = String(answer.headers['traceparent'] ?? '');
    assert.match(traceparent, /^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
    return { traceId: traceparent.split('-')[1]!, requestId: String(answer.headers['x-request-id']) };
  }

  /**
   * The invocation once its spans are in: the edge's (queued in Redis by the edge, taken in
   * by the control API's intake, driven here as tests drive every loop), the invoke's, two
   * model calls and the tool call.
   */
  async function invocation(agent: Agent, traceId: string) {
    return waitFor(`invocation ${traceId} with its 5 spans`, async () => {
      await control.control.loops.edgeSpans.runOnce();
      const got = await control.request('GET', `/agents/${agent.id}/invocations/${traceId}`, { token: agent.token });
      return got.status === 200 && got.body.spans.length === 5 ? got.body : undefined;
    }, 30_000, 250);
  }

  it('an invoke that calls the model twice and a tool once reads back as a root span with two model spans and one tool span, tokens and cost', async () => {
    const { token, user } = await control.signUp();
    await control.db('accounts').where({ id: user.account_id }).update({ plan: 'pro' });
    const created = await control.request('POST', '/agents', {
      token,
      body: { name: 'calculator', model: 'gpt-4o', api_key: TEST_KEYS.openai, access: 'public', rate_limit_rpm: 100_000, deploy: { replicas: 1, env: envOf('one') } },
    });
    expectStatus(created, 201);
    const agent: Agent = { token, id: created.body.id, host: new URL(created.body.url).hostname };
    await deployed(agent, 1);

    const question = `what is 2 + 3, asks ${agent.id}`;
    provider.reply({ toolCalls: [{ name: 'add', args: { a: 2, b: 3 } }] }, { text: 'It is 5.' });
    const { traceId, requestId } = await invoke(agent, question);
    // The edge started the trace (the caller sent no traceparent), with the request id's digits as its id.
    assert.equal(traceId, requestId.replaceAll('-', ''));
    const { invocation: summary, spans } = await invocation(agent, traceId);

    // Each of the fake provider's answers reports 10 tokens in and 5 out; gpt-4o's default price is $2.50 / $10 per million.
    assert.equal(summary.invocation_id, traceId);
    assert.equal(summary.status, 'ok');
    assert.deepEqual([summary.input_tokens, summary.output_tokens, summary.tool_calls], [20, 10, 1]);
    assert.deepEqual(summary.models, ['gpt-4o']);
    assert.ok(Math.abs(summary.cost_usd - (20 * 2.5 + 10 * 10) / 1e6) < 1e-12, `cost ${summary.cost_usd}`);

    const operation = (span: { attributes: Record<string, unknown> }) => span.attributes['gen_ai.operation.name'];
    // The edge's span is the trace's root, from the request's arrival to the answer's last byte; the invoke hangs under it.
    const edgeSpan = spans.find((span: { parent_span_id: string | null }) => !span.parent_span_id);
    assert.equal(edgeSpan.name, 'POST /invoke');
    assert.deepEqual([edgeSpan.attributes['http.response.status_code'], edgeSpan.attributes['platform.request_id']], [200, requestId]);
    const root = spans.find((span: { attributes: Record<string, unknown> }) => operation(span) === 'invoke_agent');
    assert.equal(root.parent_span_id, edgeSpan.span_id, "the invoke's span is the edge span's child");
    assert.ok(edgeSpan.duration_ms >= root.duration_ms, `the edge's ${edgeSpan.duration_ms} ms hold the invoke's ${root.duration_ms} ms`);
    assert.ok(summary.duration_ms >= edgeSpan.duration_ms);
    const children = spans.filter((span: { span_id: string }) => span !== root && span !== edgeSpan);
    assert.deepEqual(children.map(operation).sort(), ['chat', 'chat', 'execute_tool']);
    for (const child of children) assert.equal(child.parent_span_id, root.span_id, `${child.name} is the invoke's child`);
    const chats = children.filter((span: { attributes: Record<string, unknown> }) => operation(span) === 'chat');
    for (const chat of chats) {
      assert.equal(chat.attributes['gen_ai.provider.name'], 'openai');
      assert.equal(chat.attributes['gen_ai.request.model'], 'gpt-4o');
      assert.equal(chat.attributes['gen_ai.usage.input_tokens'], 10);
      assert.equal(chat.attributes['gen_ai.usage.output_tokens'], 5);
    }
    assert.equal(children.find((span: { attributes: Record<string, unknown> }) => operation(span) === 'execute_tool').attributes['gen_ai.tool.name'], 'add');

    // The same trace reached the operator's OTLP/HTTP receiver, which decoded it with the official protos.
    const forwarded = await waitFor('the trace at the OTLP receiver', async () => {
      const exported = receiver.received.flatMap((one) => one.body.resourceSpans.flatMap((resource: any) => resource.scopeSpans.flatMap((scope: any) => scope.spans)));
      const ours = exported.filter((span: { traceId: string }) => span.traceId === traceId);
      return ours.length === 5 ? ours : undefined;
    }, 30_000, 250);
    assert.ok(receiver.received.every((one) => one.headers['content-type'] === 'application/x-protobuf' && one.path === '/v1/traces'));
    const attributesOf = (span: { attributes: { key: string; value: Record<string, unknown> }[] }) => new Map(span.attributes.map((kv) => [kv.key, Object.values(kv.value)[0]]));
    assert.ok(forwarded.some((span: any) => span.name === 'POST /invoke' && span.kind === 2), "the edge's span is forwarded too");
    const exportedChats = forwarded.filter((span: any) => attributesOf(span).get('gen_ai.operation.name') === 'chat');
    assert.equal(exportedChats.length, 2);
    for (const chat of exportedChats) assert.deepEqual([attributesOf(chat).get('gen_ai.usage.input_tokens'), attributesOf(chat).get('gen_ai.usage.output_tokens')], ['10', '5']);
    assert.deepEqual(forwarded.map((span: any) => span.spanId).sort(), spans.map((span: { span_id: string }) => span.span_id).sort());

    // Every gen_ai.* attribute the runtime wrote is a name of the conventions' registry, with a value it allows.
    const registry = genAiRegistry();
    const names = new Set(forwarded.flatMap((span: any) => [...attributesOf(span).keys()]).filter((key) => key.startsWith('gen_ai.')));
    assert.ok(names.size >= 8, `gen_ai attributes sent: ${[...names].join(', ')}`);
    for (const name of names) assert.ok(registry.has(name), `${name} is not in the GenAI registry`);
    for (const span of forwarded) {
      for (const [name, value] of attributesOf(span)) {
        const type = registry.get(name)?.type;
        if (typeof type === 'object') assert.ok(type.members.some((member) => member.value === value), `${name} = ${String(value)} is not one of the registry's values`);
      }
    }

    // trace_content is off by default: the question is stored nowhere in the traces.
    const stored = JSON.stringify(await control.db('trace_spans').where({ agent_id: agent.id }));
    assert.ok(!stored.includes(question), 'message text stored with trace_content off');

    // With trace_content on, the model spans carry the messages.
    expectStatus(await control.request('POST', `/agents/${agent.id}/deploy`, { token, body: { env: envOf('two'), trace_content: true } }), 202);
    await deployed(agent, 2);
    const shown = `what is 4 + 5, asks ${agent.id}`;
    provider.reply({ toolCalls: [{ name: 'add', args: { a: 4, b: 5 } }] }, { text: 'It is 9.' });
    // A caller's own trace is continued: its trace id, the edge's span its span's child.
    const callerTrace = '4bf92f3577b34da6a3ce929d0e0e4736';
    const second = await invoke(agent, shown, { traceparent: `00-${callerTrace}-00f067aa0ba902b7-01` });
    assert.equal(second.traceId, callerTrace);
    const continued = await invocation(agent, second.traceId);
    const edgeOfSecond = continued.spans.find((span: { name: string }) => span.name === 'POST /invoke');
    assert.equal(edgeOfSecond.parent_span_id, '00f067aa0ba902b7');
    assert.ok(JSON.stringify(await control.db('trace_spans').where({ agent_id: agent.id })).includes(shown), 'message text kept with trace_content on');
  });
});
