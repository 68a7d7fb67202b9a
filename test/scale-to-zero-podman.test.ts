import assert from 'node:assert/strict';
import { edgeKeyNames } from '../contract/edge-keys.js';
import { startControl, type TestControl } from './support/control-harness.js';
import { edgeRequest, type EdgeResponse } from './support/edge-upstream.js';
import { startLocalEdgeStack, type LocalEdgeStack } from './support/local-edge-stack.js';
import { containersOf, podman } from './support/podman.js';
import { waitFor } from './support/wait.js';

/**
 * Issue 19's done-when on real parts: podman replicas, Postgres, Redis, authz and the
 * local edge. The idle parker's passes are driven by the test (the harness leaves loop
 * timers off); the wake listener runs as in control/main.ts.
 */
describe('scale to zero and wake on the first request (podman, authz, local edge)', function () {
  this.timeout(300_000);
  let control: TestControl;
  let edge: LocalEdgeStack;
  let token: string;

  before(async () => {
    control = await startControl({}, { orchestrate: true });
    // A short wake timeout, so the broken agent's 503 comes within the test's patience.
    edge = await startLocalEdgeStack(control, { wakeTimeoutSeconds: 8 });
    control.control.loops.wakes!.start();
    ({ token } = await control.signUp());
  });
  after(async () => {
    await control?.control.loops.wakes?.stop();
    await edge?.close();
    await control?.close();
  });

  function call(host: string, path: string, headers: Record<string, string> = {}): Promise<EdgeResponse> {
    return edgeRequest({ port: edge.port, host, path, headers });
  }

  const hostOf = (agent: { url: string }) => new URL(agent.url).hostname;
  const agentOf = async (id: string) => (await control.request('GET', `/agents/${id}`, { token })).body;
  const replicaHours = async () => {
    // The usage figures run up to the API's clock, a manual one in tests; the replicas ran in real time.
    control.clock.set(new Date());
    return (await control.request('GET', '/account/usage', { token })).body.period.replica_hours as number;
  };
  /** Replicas that run or are on their way to: a failed or crashed one left in the list does not count. */
  const replicasRunning = async (id: string) =>
    (await control.driver!.status(id))?.replicas.filter((r) => ['pending', 'starting', 'running', 'restarting'].includes(r.state)).length ?? 0;
  const parkPass = () => control.control.loops.parker!.runOnce();

  async function deployed(name: string, deploy: Record<string, unknown>) {
    const created = await control.request('POST', '/agents', {
      token,
      body: { name, api_key: 'sk-test', deploy: { replicas: 1, auto_scale: true, min_replicas: 0, max_replicas: 2, scale_to_zero_after_seconds: 30, ...deploy } },
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    return created.body;
  }

  it('parks an idle agent at 0 replicas (running, metered at zero), refuses an unauthorised caller without waking it, and wakes one replica for ten concurrent requests that all get the agent\'s answer', async () => {
    const agent = await deployed('sleepy', {});
    const host = hostOf(agent);
    const key = { authorization: `Bearer ${agent.access_key}` };
    await waitFor('the agent routable at the edge', async () => ((await call(host, '/health', key)).status === 200 ? true : undefined), 60_000);
    // While it runs, replica-hours grow between two metering passes 3 s apart (4 decimals: 3 s is 0.0008 h).
    const meter = control.control.loops.meter!;
    await meter.pass();
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    await meter.pass();
    const whileRunning = await replicaHours();
    assert.ok(whileRunning > 0, 'metered while running');

    // Idle from here: the parker's first look counts as activity, so it parks 30 s later, not before.
    await waitFor('parked after 30 s without requests', async () => {
      await parkPass();
      return (await agentOf(agent.id)).deploy && (await control.db('agents').where({ id: agent.id }).first()).parked_at ? true : undefined;
    }, 90_000, 2_000);
    const parked = await waitFor('the replica gone', async () => {
      const shown = await agentOf(agent.id);
      return shown.replicas === 0 && (await replicasRunning(agent.id)) === 0 ? shown : undefined;
    }, 60_000);
    assert.equal(parked.status, 'running', 'parked, not stopped');
    assert.equal(parked.replicas, 0);
    // Warm-parked, for the default warm_park_seconds: its container frozen, not removed (issue 40).
    const [container, ...others] = containersOf(agent.id);
    assert.deepEqual(others, []);
    await waitFor('its container paused', async () => (podman(['inspect', '--format', '{{.State.Status}}', container!]).trim() === 'paused' ? true : undefined), 30_000);

    // Metered at zero: the same two passes 3 s apart, and the month's replica-hours stay put.
    await meter.pass();
    const parkedHours = await replicaHours();
    assert.ok(parkedHours > whileRunning, 'the time it ran until parked counts');
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    await meter.pass();
    assert.equal(await replicaHours(), parkedHours);

    // No key, a wrong key: 401, and nothing wakes.
    assert.equal((await call(host, '/health')).status, 401);
    assert.equal((await call(host, '/health', { authorization: 'Bearer agk_wrong' })).status, 401);
    assert.equal(await control.redis.exists(edgeKeyNames.wake(agent.slug ?? host.split('.')[0]!)), 0, 'no wake requested');
    assert.equal(await control.redis.llen(edgeKeyNames.wakeQueue), 0);
    assert.equal((await control.db('agents').where({ id: agent.id }).first()).desired_replicas, 0);
    assert.equal(await replicasRunning(agent.id), 0);

    // Ten at once: one wake, one replica, ten real answers from the agent.
    const answers = await Promise.all(Array.from({ length: 10 }, () => call(host, '/cgi-bin/env', key)));
    for (const answer of answers) {
      assert.equal(answer.status, 200, answer.body);
      assert.match(answer.body, new RegExp(`^HTTP_X_AGENT_ID=${agent.id}$`, 'm'), 'the agent itself answered');
    }
    const woken = await agentOf(agent.id);
    assert.equal(woken.deploy.min_replicas, 0);
    assert.equal((await control.db('agents').where({ id: agent.id }).first()).desired_replicas, 1);
    assert.equal((await control.driver!.status(agent.id))?.replicas.length, 1, 'one replica started for ten requests');
    assert.deepEqual(containersOf(agent.id), [container], 'the frozen one, thawed');
    await waitFor('back at 1 replica', async () => ((await agentOf(agent.id)).replicas === 1 ? true : undefined), 30_000);
  });

  it('answers 503 within the wake timeout when the woken agent cannot start (a broken image)', async () => {
    // MODE=exit: the test image exits at once, so no replica ever becomes routable.
    const agent = await deployed('broken', { env: [{ key: 'MODE', value: 'exit' }] });
    await waitFor('failed or crashed', async () => (['failed', 'crashed'].includes((await agentOf(agent.id)).status) ? true : undefined), 120_000);
    // The idle parker's call (its timing is the first test's): parked at 0.
    assert.equal(await control.control.services.platformScaling.park(agent.id, 1), true);
    await waitFor('no replica left', async () => ((await replicasRunning(agent.id)) === 0 ? true : undefined), 60_000);

    const answer = await call(hostOf(agent), '/health', { authorization: `Bearer ${agent.access_key}` });
    assert.equal(answer.status, 503);
    assert.equal(answer.body, 'service unavailable: the agent is starting, retry shortly\n');
    assert.equal(answer.headers['retry-after'], '5');
    assert.equal((await control.db('agents').where({ id: agent.id }).first()).desired_replicas, 1, 'the wake did start it');
  });
});
