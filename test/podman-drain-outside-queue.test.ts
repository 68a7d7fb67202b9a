import assert from 'node:assert/strict';
import { startControl, type TestControl } from './support/control-harness.js';
import { createRunningAgent, podman, waitFor } from './support/orch-helpers.js';

/**
 * The podman driver runs every step in one queue (control/orchestrator/podman/driver.ts).
 * A replica that leaves (a scale-down, a rollout's old version, a park) first gets the drain
 * period, DRAIN_SECONDS, for requests already on their way, and then its stop. Both ran in
 * the queue, so each scale-down or park held back every other agent's steps, wakes
 * included, for the whole drain. They run outside it now (supervisor.ts, retire and
 * keepParked): here another agent's step completes while a drain is under way, and a wake
 * during a park's drain routes the same replica again.
 *
 * A long drain, so "during the drain" is seconds of margin on a loaded host, not a race.
 * The reconciler is kept out of the way of the test's own scales.
 */
const DRAIN_SECONDS = 20;

describe('podman: drains and stops outside the driver queue', function () {
  this.timeout(240_000);
  let control: TestControl;

  before(async () => {
    control = await startControl({ DRAIN_SECONDS: String(DRAIN_SECONDS), RECONCILE_INTERVAL_SECONDS: '3600' }, { orchestrate: true });
  });

  after(async () => {
    await control?.close();
  });

  const containerState = async (name: string) => (await podman(control, ['container', 'inspect', '--format', '{{.State.Status}}', name])).stdout.trim();

  it("another agent's scale completes while a scale-down's replica still drains, and that replica goes after", async () => {
    const { token } = await control.signUp();
    const a = await createRunningAgent(control, token, { deploy: { replicas: 2 } });
    const b = await createRunningAgent(control, token);
    await waitFor('both replicas of A routed', async () => {
      const status = await control.driver.status(a.id);
      return status?.replicas.filter((r) => r.state === 'running' && r.address).length === 2 ? true : undefined;
    }, 60_000);

    const down = await control.request('POST', `/agents/${a.id}/scale`, { token, body: { direction: 'down', count: 1 } });
    assert.equal(down.status, 200, JSON.stringify(down.body));
    const leaving = await waitFor('one replica of A stopping', async () => (await control.driver.status(a.id))!.replicas.find((r) => r.state === 'stopping'), 30_000, 50);
    assert.equal(leaving.address, null, 'out of routing from the start of its drain');

    const up = await control.request('POST', `/agents/${b.id}/scale`, { token, body: { direction: 'up', count: 1 } });
    assert.equal(up.status, 200, JSON.stringify(up.body));
    await waitFor("B's second replica created", async () => ((await control.driver.status(b.id))?.replicas.length === 2 ? true : undefined), 60_000, 50);

    assert.equal(await containerState(leaving.id), 'running', "A's leaving replica still drains: B's scale did not wait for it");
    assert.ok((await control.driver.status(a.id))!.replicas.some((r) => r.id === leaving.id && r.state === 'stopping'), 'still listed, stopping');

    await waitFor("A's leaving replica removed after its drain", async () => {
      const listed = (await control.driver.status(a.id))!.replicas.some((r) => r.id === leaving.id);
      const exists = (await podman(control, ['container', 'exists', leaving.id])).code === 0;
      return !listed && !exists ? true : undefined;
    }, (DRAIN_SECONDS + 30) * 1000);
    const left = (await control.driver.status(a.id))!.replicas;
    assert.deepEqual(left.map((r) => r.state), ['running'], 'A serves on its one other replica');
  });

  it('a park returns before its drain ends; a wake during the drain routes the same replica again, never frozen', async () => {
    const { token } = await control.signUp();
    const c = await createRunningAgent(control, token);
    const warmUntil = new Date(Date.now() + 600_000);

    await control.driver.scale(c.id, 0, { warmUntil });
    assert.deepEqual((await control.driver.status(c.id))!.replicas, [], 'parked: out of routing');
    assert.equal(await containerState(c.replica.id), 'running', 'the scale to 0 returned during the drain, before any freeze');

    await control.driver.scale(c.id, 1);
    const woken = (await control.driver.status(c.id))!;
    assert.deepEqual(woken.replicas.map((r) => ({ id: r.id, state: r.state, address: r.address })), [{ id: c.replica.id, state: 'running', address: c.replica.address }]);
    assert.ok(woken.events.some((e) => e.replicaId === c.replica.id && e.type === 'woken'), JSON.stringify(woken.events.slice(-4)));

    // The drain the park had started ends now; it must find the replica taken back and leave it.
    await new Promise((resolve) => setTimeout(resolve, (DRAIN_SECONDS + 2) * 1000));
    assert.equal(await containerState(c.replica.id), 'running', 'not frozen after the wake');
    assert.deepEqual((await control.driver.status(c.id))!.replicas.map((r) => r.id), [c.replica.id]);

    // Parked again without a wake: frozen once its drain is over.
    await control.driver.scale(c.id, 0, { warmUntil });
    await waitFor('the replica frozen after its drain', async () => ((await containerState(c.replica.id)) === 'paused' ? true : undefined), (DRAIN_SECONDS + 30) * 1000);
  });
});
