import assert from 'node:assert/strict';
import type { FakeProvider } from '../runtime-image/test/helpers/fake-provider.js';
import { TEST_KEYS } from '../runtime-image/test/helpers/runtime.js';
import { edgeKeyNames } from '../contract/edge-keys.js';
import type { TestControl } from './support/control-harness.js';
import { expectStatus } from './support/control-api.js';
import { edgeRequest } from './support/edge-upstream.js';
import type { LocalEdgeStack } from './support/local-edge-stack.js';
import { containersOf, podman, podmanStates } from './support/podman.js';
import { invokeThroughEdge, type ServedAgent } from './support/runtime-agents.js';
import { startRuntimeStack, type RuntimeStack } from './support/runtime-stack.js';
import { waitFor } from './support/wait.js';

interface PrivateAgent extends ServedAgent {
  slug: string;
  key: string;
}

/**
 * Issue 40 on real parts: the default runtime image on podman, its model a fake provider
 * speaking OpenAI's wire format, authz and the local edge in front. The agent services are
 * off (AGENT_SERVICES_PORT 0), so the runtime keeps conversations in its memory only: a
 * conversation that goes on after a wake proves the replica's memory was kept. A warm-parked
 * replica is a paused container; a cold-parked one has no process.
 */
describe('warm and cold parking (podman, the runtime image, the local edge)', function () {
  this.timeout(600_000);
  let stack: RuntimeStack;
  let control: TestControl;
  let edge: LocalEdgeStack;
  let provider: FakeProvider;

  before(async () => {
    // No agent services: the runtime keeps conversations in its memory.
    stack = await startRuntimeStack({ AGENT_SERVICES_PORT: '0' }, { wakes: true });
    ({ control, edge, provider } = stack);
  });
  after(async () => {
    await stack?.close();
  });

  async function privateAgent(name: string, warmParkSeconds: number): Promise<PrivateAgent> {
    const { token, user } = await control.signUp();
    await control.db('accounts').where({ id: user.account_id }).update({ plan: 'pro' });
    const created = await control.request('POST', '/agents', {
      token,
      body: {
        name, model: 'gpt-4o', api_key: TEST_KEYS.openai, access: 'private',
        deploy: {
          replicas: 1, auto_scale: true, min_replicas: 0, max_replicas: 1, scale_to_zero_after_seconds: 30, warm_park_seconds: warmParkSeconds,
          env: [{ key: 'OPENAI_BASE_URL', value: provider.baseUrl('openai', 'host.containers.internal') }],
        },
      },
    });
    expectStatus(created, 201);
    const agent = { token, id: created.body.id as string, host: new URL(created.body.url).hostname, slug: new URL(created.body.url).hostname.split('.')[0]!, key: created.body.access_key as string };
    await waitFor(`running; podman has ${podmanStates(agent.id)}`, async () => ((await shown(agent)).replicas === 1 ? true : undefined), 180_000, 250);
    return agent;
  }

  const shown = async (agent: ServedAgent) => (await control.request('GET', `/agents/${agent.id}`, { token: agent.token })).body;
  const containerState = (name: string) => podman(['inspect', '--format', '{{.State.Status}} {{.State.Pid}}', name]).trim().split(' ');
  const usage = async (agent: ServedAgent) => (await control.request('GET', '/account/usage', { token: agent.token })).body;

  async function turn(agent: PrivateAgent, input: string, sessionId?: string): Promise<string> {
    const answer = await invokeThroughEdge(edge, agent, { input, ...(sessionId ? { session_id: sessionId } : {}) }, { authorization: `Bearer ${agent.key}` });
    return (JSON.parse(answer.body) as { session_id: string }).session_id;
  }

  /** The user messages the model was sent on its last call: the conversation as the replica had it. */
  const lastConversation = () =>
    (provider.requests.at(-1)!.body.messages as { role: string; content: unknown }[]).filter((m) => m.role === 'user').map((m) => String(m.content));

  /** Parks the agent as the idle parker does (its idle timing is scale-to-zero-podman.test.ts's). */
  async function park(agent: ServedAgent): Promise<void> {
    assert.equal(await control.control.services.platformScaling.park(agent.id, 1), true);
    await waitFor('no replica listed', async () => ((await shown(agent)).replicas === 0 && (await control.driver!.status(agent.id))?.replicas.length === 0 ? true : undefined), 60_000, 100);
  }

  /** A running private agent that has answered `firstTurn` of a conversation: its session and its one container. */
  async function agentInConversation(name: string, warmParkSeconds: number, firstTurn: string) {
    const agent = await privateAgent(name, warmParkSeconds);
    provider.reset();
    provider.defaultReply = { text: 'noted' };
    const sessionId = await turn(agent, firstTurn);
    const [container] = containersOf(agent.id);
    return { agent, sessionId, container };
  }

  async function refusedWithoutWaking(agent: PrivateAgent): Promise<void> {
    for (const authorization of [undefined, 'Bearer agk_wrong']) {
      const answer = await edgeRequest({ port: edge.port, host: agent.host, path: '/invoke', method: 'POST', headers: { 'content-type': 'application/json', ...(authorization ? { authorization } : {}) }, body: '{"input":"hi"}' });
      assert.equal(answer.status, 401, answer.body);
    }
    assert.equal(await control.redis.exists(edgeKeyNames.wake(agent.slug)), 0, 'no wake requested');
    assert.equal((await control.db('agents').where({ id: agent.id }).first()).desired_replicas, 0);
  }

  it('warm-parks an idle agent (its container paused, 0 replicas, not metered, its memory counted) and a request thaws it into the same conversation', async () => {
    const { agent, sessionId, container } = await agentInConversation('warm', 600, 'remember the number 7');
    const meter = control.control.loops.meter!;
    await meter.pass();

    await park(agent);
    await waitFor(`paused; podman has ${podmanStates(agent.id)}`, async () => (containerState(container!)[0] === 'paused' ? true : undefined), 30_000, 100);
    const parked = await shown(agent);
    assert.deepEqual([parked.status, parked.replicas], ['running', 0]);
    const { usage: now } = await usage(agent);
    assert.deepEqual([now.replicas, now.warm_parked_replicas, now.memory_mb], [0, 1, 512], 'not a running replica, yet its 512 MB are held');
    // Not metered: no replica interval stays open, so the month's replica hours stop growing.
    await meter.pass();
    assert.deepEqual(await control.db('replica_intervals').where({ agent_id: agent.id }).whereNull('stopped_at').select('replica_id'), []);
    // The period runs up to the control API's clock, which follows the wall clock every 100 ms; the
    // meter closed the interval by the wall clock: once the former has passed that end, the figure holds.
    await new Promise((resolve) => setTimeout(resolve, 300));
    const { period } = await usage(agent);
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    await meter.pass();
    assert.equal((await usage(agent)).period.replica_hours, period.replica_hours);

    await refusedWithoutWaking(agent);
    assert.equal(containerState(container!)[0], 'paused', 'an unauthorised request thaws nothing');

    await turn(agent, 'which number?', sessionId);
    assert.deepEqual(lastConversation(), ['remember the number 7', 'which number?'], 'the replica remembered: its memory was kept');
    assert.deepEqual(containersOf(agent.id), [container], 'the same container answered');
    assert.equal(containerState(container!)[0], 'running');
    const events = (await control.driver!.status(agent.id))!.events.map((e) => `${e.type}: ${e.message}`);
    assert.ok(events.some((e) => /^parked: frozen in memory \(warm\)/.test(e)) && events.includes('woken: thawed: routable with its memory intact'), events.join('\n'));
    assert.equal((await usage(agent)).usage.warm_parked_replicas, 0);
  });

  it('cold-parks once warm_park_seconds are over (no process left), and a request starts it again', async () => {
    const { agent, sessionId, container } = await agentInConversation('cold', 2, 'before the park');

    await park(agent);
    const cooled = async () => (await control.driver!.status(agent.id))!.events.some((e) => `${e.type}: ${e.message}` === 'parked: warm period over: stopped (cold)');
    await waitFor(`stopped after its 2 s warm; podman has ${podmanStates(agent.id)}`, async () => ((await cooled()) ? true : undefined), 60_000, 200);
    assert.deepEqual(containerState(container!), ['exited', '0'], 'no process');
    assert.deepEqual([(await usage(agent)).usage.warm_parked_replicas, (await usage(agent)).usage.memory_mb], [0, 0], 'cold: holds no memory');

    await refusedWithoutWaking(agent);
    assert.equal(containerState(container!)[0], 'exited', 'an unauthorised request starts nothing');

    // No checkpoint restore on a host where CRIU cannot dump (the driver says which at start): a
    // fresh process from the stopped container, so a conversation kept only in memory starts over.
    await turn(agent, 'after the wake', sessionId);
    assert.deepEqual(lastConversation(), ['after the wake']);
    assert.deepEqual(containersOf(agent.id), [container], 'started again from its stopped container, not created anew');
    assert.equal(containerState(container!)[0], 'running');
  });
});
