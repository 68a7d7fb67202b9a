import assert from 'node:assert/strict';
import { FakeProvider } from '../runtime-image/test/helpers/fake-provider.js';
import { TEST_KEYS } from '../runtime-image/test/helpers/runtime.js';
import { startControl, type TestControl } from './support/control-harness.js';
import { expectStatus } from './support/control-api.js';
import { startLocalEdgeStack, type LocalEdgeStack } from './support/local-edge-stack.js';
import { buildRuntimeImage, invokeThroughEdge, type ServedAgent as Agent } from './support/runtime-agents.js';
import { waitFor } from './support/wait.js';

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
  let clockFollower: NodeJS.Timeout | undefined;

  before(async () => {
    const image = buildRuntimeImage();
    provider = await FakeProvider.start();
    control = await startControl({ RUNTIME_IMAGE: image, PODMAN_AGENT_HOST_PORTS: String(provider.port) }, { orchestrate: true });
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

  async function invoke(agent: Agent, input: string): Promise<string> {
    const answer = await invokeThroughEdge(edge, agent, { input });
    // The runtime answers with its root span's traceparent: 00-<trace id>-<span id>-01.
    const traceparent = String(answer.headers['traceparent'] ?? '');
    assert.match(traceparent, /^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
    return traceparent.split('-')[1]!;
  }

  /** The invocation once its spans are in: the root, two model calls and the tool call. */
  async function invocation(agent: Agent, traceId: string) {
    return waitFor(`invocation ${traceId} with its 4 spans`, async () => {
      const got = await control.request('GET', `/agents/${agent.id}/invocations/${traceId}`, { token: agent.token });
      return got.status === 200 && got.body.spans.length === 4 ? got.body : undefined;
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
    const traceId = await invoke(agent, question);
    const { invocation: summary, spans } = await invocation(agent, traceId);

    // Each of the fake provider's answers reports 10 tokens in and 5 out; gpt-4o's default price is $2.50 / $10 per million.
    assert.equal(summary.invocation_id, traceId);
    assert.equal(summary.status, 'ok');
    assert.deepEqual([summary.input_tokens, summary.output_tokens, summary.tool_calls], [20, 10, 1]);
    assert.deepEqual(summary.models, ['gpt-4o']);
    assert.ok(Math.abs(summary.cost_usd - (20 * 2.5 + 10 * 10) / 1e6) < 1e-12, `cost ${summary.cost_usd}`);

    const operation = (span: { attributes: Record<string, unknown> }) => span.attributes['gen_ai.operation.name'];
    const root = spans.find((span: { parent_span_id: string | null }) => !span.parent_span_id);
    assert.equal(operation(root), 'invoke_agent');
    const children = spans.filter((span: { span_id: string }) => span !== root);
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

    // trace_content is off by default: the question is stored nowhere in the traces.
    const stored = JSON.stringify(await control.db('trace_spans').where({ agent_id: agent.id }));
    assert.ok(!stored.includes(question), 'message text stored with trace_content off');

    // With trace_content on, the model spans carry the messages.
    expectStatus(await control.request('POST', `/agents/${agent.id}/deploy`, { token, body: { env: envOf('two'), trace_content: true } }), 202);
    await deployed(agent, 2);
    const shown = `what is 4 + 5, asks ${agent.id}`;
    provider.reply({ toolCalls: [{ name: 'add', args: { a: 4, b: 5 } }] }, { text: 'It is 9.' });
    const second = await invoke(agent, shown);
    await invocation(agent, second);
    assert.ok(JSON.stringify(await control.db('trace_spans').where({ agent_id: agent.id })).includes(shown), 'message text kept with trace_content on');
  });
});
