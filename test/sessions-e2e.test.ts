import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { FakeProvider } from '../runtime-image/test/helpers/fake-provider.js';
import { TEST_KEYS } from '../runtime-image/test/helpers/runtime.js';
import type { TestControl } from './support/control-harness.js';
import { expectStatus } from './support/control-api.js';
import type { LocalEdgeStack } from './support/local-edge-stack.js';
import { containersOf, podman, podmanStates, runningContainersOf } from './support/podman.js';
import { invokeThroughEdge, type ServedAgent as Agent } from './support/runtime-agents.js';
import { startRuntimeStack, type RuntimeStack } from './support/runtime-stack.js';
import { waitFor } from './support/wait.js';

/**
 * Issue 37 end to end, as a caller meets it: the default runtime image on podman, its
 * model a fake provider speaking OpenAI's wire format, authz and the local edge in front.
 * The agent runs 2 replicas; each turn of one conversation goes through the edge, the
 * `session_id` sent back, and whichever replica answers must send the model the whole
 * conversation: the replicas keep it through the agent services (control API, Postgres),
 * each with a token of its own, not in their memory. Replicas are told apart by the
 * address the provider sees each model call come from (one per container), and so are
 * the two versions of a canary.
 */
describe('conversations that survive replicas, redeploys, restarts and parking (podman, the runtime image, the local edge)', function () {
  this.timeout(600_000);
  let stack: RuntimeStack;
  let control: TestControl;
  let edge: LocalEdgeStack;
  let provider: FakeProvider;
  const callers = new Map<number, string>();

  before(async () => {
    // A parked agent is woken by a request at the edge, through the control API's wake loop.
    stack = await startRuntimeStack({}, { wakes: true });
    ({ control, edge, provider } = stack);
  });
  after(async () => {
    await stack?.close();
  });

  async function servingAgent(name: string, replicas: number, deploy: Record<string, unknown> = {}): Promise<Agent> {
    const { token, user } = await control.signUp();
    await control.db('accounts').where({ id: user.account_id }).update({ plan: 'pro' });
    const created = await control.request('POST', '/agents', {
      token,
      body: {
        name, model: 'gpt-4o', api_key: TEST_KEYS.openai, access: 'public', rate_limit_rpm: 100_000,
        deploy: { replicas, env: [{ key: 'OPENAI_BASE_URL', value: provider.baseUrl('openai', 'host.containers.internal') }], ...deploy },
      },
    });
    expectStatus(created, 201);
    const agent = { token, id: created.body.id as string, host: new URL(created.body.url).hostname };
    await running(agent, replicas);
    return agent;
  }

  async function running(agent: Agent, replicas: number): Promise<void> {
    await waitFor(`${replicas} replica(s) running; podman has ${podmanStates(agent.id)}`, async () => {
      const shown = (await control.request('GET', `/agents/${agent.id}`, { token: agent.token })).body;
      const deployments = (await control.request('GET', `/agents/${agent.id}/deployments`, { token: agent.token })).body.deployments;
      if (deployments[0]?.status === 'failed') throw new Error(`deployment failed: ${deployments[0].error}`);
      return shown.status === 'running' && shown.replicas === replicas && deployments[0]?.status === 'succeeded' ? true : undefined;
    }, 180_000, 250);
  }

  /** One turn through the edge: the session id the answer names. */
  async function turn(agent: Agent, input: string, sessionId?: string): Promise<string> {
    const answer = await invokeThroughEdge(edge, agent, { input, ...(sessionId ? { session_id: sessionId } : {}) });
    return (JSON.parse(answer.body) as { session_id: string }).session_id;
  }

  /** The user messages the model was sent on its last call: the conversation as the answering replica had it. */
  function lastConversation(): string[] {
    const request = provider.requests.at(-1)!;
    return (request.body.messages as { role: string; content: unknown }[]).filter((m) => m.role === 'user').map((m) => String(m.content));
  }

  it('20 turns over 2 replicas: the model gets the whole conversation every time, whichever replica answered', async () => {
    const agent = await servingAgent('two replicas', 2);
    provider.reset();
    provider.defaultReply = { text: 'noted' };
    const inputs: string[] = [];
    let sessionId: string | undefined;
    const addresses = new Set<string>();
    for (let i = 1; i <= 20; i += 1) {
      const input = `turn ${i}`;
      inputs.push(input);
      sessionId = await turn(agent, input, sessionId);
      assert.deepEqual(lastConversation(), inputs, `turn ${i}`);
      addresses.add(String(provider.requests.at(-1)!.remoteAddress));
    }
    assert.ok(addresses.size >= 2, `both replicas answered: ${[...addresses].join(', ')}`);
    const sessions = (await control.request('GET', `/agents/${agent.id}/sessions`, { token: agent.token })).body.sessions;
    assert.deepEqual(sessions.map((s: { session_id: string }) => s.session_id), [sessionId]);
    assert.equal(sessions[0].message_count, 40, 'each turn: the user message and the answer');
  });

  it('the conversation goes on after a redeploy, after every container is killed, and after the agent is parked and woken', async () => {
    // Parked after 30 s without a request (the idle parker's shortest wait), woken by the next one;
    // parked cold at once (warm_park_seconds 0), so the wake starts a new process, which holds nothing in memory.
    const agent = await servingAgent('survivor', 1, { auto_scale: true, min_replicas: 0, max_replicas: 1, scale_to_zero_after_seconds: 30, warm_park_seconds: 0 });
    provider.reset();
    provider.defaultReply = { text: 'noted' };
    const inputs = ['before anything'];
    const sessionId = await turn(agent, inputs[0]!);

    const redeployed = await control.request('POST', `/agents/${agent.id}/deploy`, {
      token: agent.token,
      body: { env: [{ key: 'OPENAI_BASE_URL', value: provider.baseUrl('openai', 'host.containers.internal') }, { key: 'VERSION', value: 'two' }] },
    });
    expectStatus(redeployed, 202);
    await waitFor('version 2 serving alone', async () => {
      const deployments = (await control.request('GET', `/agents/${agent.id}/deployments`, { token: agent.token })).body.deployments;
      return deployments[0]?.status === 'succeeded' && deployments[0]?.agent_version === 2 ? true : undefined;
    }, 180_000, 250);
    inputs.push('after the redeploy');
    await turn(agent, inputs.at(-1)!, sessionId);
    assert.deepEqual(lastConversation(), inputs);

    const killed = containersOf(agent.id);
    podman(['kill', ...killed]);
    // The driver restarts it; until then the edge answers 502 or 503, which `turn` waits out.
    inputs.push('after the kill');
    await turn(agent, inputs.at(-1)!, sessionId);
    assert.deepEqual(lastConversation(), inputs);

    // Parked cold: no replica, no process (its container stopped); woken by the next turn: a new process.
    await waitFor('parked after 30 s without requests', async () => {
      await control.control.loops.parker!.runOnce();
      return (await control.db('agents').where({ id: agent.id }).first()).parked_at ? true : undefined;
    }, 120_000, 2_000);
    await waitFor('no container running', async () => (runningContainersOf(agent.id).length === 0 ? true : undefined), 120_000, 250);
    inputs.push('after the wake');
    await turn(agent, inputs.at(-1)!, sessionId);
    assert.deepEqual(lastConversation(), inputs);
  });

  it('during a 50% canary the conversation goes on whichever version answers each turn', async () => {
    const agent = await servingAgent('canaried', 1);
    const envOf = (version: string) => [{ key: 'OPENAI_BASE_URL', value: provider.baseUrl('openai', 'host.containers.internal') }, { key: 'VERSION', value: version }];
    const deployed = await control.request('POST', `/agents/${agent.id}/deploy`, { token: agent.token, body: { env: envOf('two'), strategy: { type: 'canary', percent: 50 } } });
    expectStatus(deployed, 202);
    await waitFor("the canary in phase 'canary'", async () => {
      const [newest] = (await control.request('GET', `/agents/${agent.id}/deployments`, { token: agent.token })).body.deployments;
      if (newest?.status === 'failed') throw new Error(`the canary failed: ${newest.error}`);
      return newest?.phase === 'canary' && newest.status === 'in_progress' ? true : undefined;
    }, 180_000, 250);
    assert.equal(containersOf(agent.id).length, 2, 'the stable replica and the canary');
    provider.reset();
    provider.defaultReply = { text: 'noted' };
    const inputs: string[] = [];
    const addresses = new Set<string>();
    let sessionId: string | undefined;
    // With half the requests to each version, 20 turns all on one has odds of 2 in a million.
    for (let i = 1; i <= 20; i += 1) {
      inputs.push(`canary turn ${i}`);
      sessionId = await turn(agent, inputs.at(-1)!, sessionId);
      assert.deepEqual(lastConversation(), inputs, `turn ${i}`);
      addresses.add(String(provider.requests.at(-1)!.remoteAddress));
    }
    assert.equal(addresses.size, 2, `both versions answered: ${[...addresses].join(', ')}`);
  });

  it("from inside agent A's container, A's token cannot read or delete agent B's session of the same id", async () => {
    const a = await servingAgent('agent a', 1);
    const b = await servingAgent('agent b', 1);
    const sessionId = await turn(b, 'a secret of b');
    const [container] = containersOf(a.id);
    // The replica's own credential and URL, as its process has them.
    const script = `
      const token = require('fs').readFileSync(process.env.AGENT_SERVICES_TOKEN_FILE, 'utf8').trim();
      const url = process.env.AGENT_SERVICES_URL + '/v1/sessions/' + ${JSON.stringify(sessionId)};
      const call = (method) => fetch(url, { method, headers: { authorization: 'Bearer ' + token } }).then(async (r) => r.status + ' ' + (await r.text()));
      (async () => { for (const method of ['GET', 'DELETE']) console.log(await call(method)); })();
    `;
    // Not execFileSync: the control API answering the container runs in this very process.
    const output = (await promisify(execFile)('podman', ['exec', container!, 'node', '-e', script], { encoding: 'utf8' })).stdout.trim().split('\n');
    assert.equal(output.length, 2, output.join('\n'));
    for (const line of output) assert.match(line, /^404 .*SESSION_NOT_FOUND/);
    assert.ok(!output.join('\n').includes('a secret of b'));
    // B's conversation is whole.
    await turn(b, 'still there?', sessionId);
    assert.deepEqual(lastConversation(), ['a secret of b', 'still there?']);
  });
});
