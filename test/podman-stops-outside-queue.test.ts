import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { stateDirectoryOf } from '../control/orchestrator/podman/host.js';
import { LABEL } from '../control/orchestrator/podman/run-args.js';
import { startControl, type TestControl } from './support/control-harness.js';
import { createRunningAgent, podman, waitFor } from './support/orch-helpers.js';
import { networkExists } from './support/podman.js';
import { TEST_IMAGE } from './support/test-image.js';

/**
 * The podman driver runs every step in one queue (control/orchestrator/podman/driver.ts),
 * and a wake is a step. Removing a container no job wants any more (a deleted agent's, a
 * stray, a parked replica discarded) is a `podman rm` that waits up to STOP_TIMEOUT_SECONDS
 * for the process to end on SIGTERM, and so is stopping a parked replica (a cold park, the
 * end of a warm period). They ran in the queue, so each held back every other agent's steps
 * for as long. They run outside it now (supervisor.ts, removeOutsideQueue and stopParked):
 * here another agent's scale completes while such a container is still stopping, and the
 * container goes (or stops) after. A wake during a parked replica's stop starts that same
 * replica once it has stopped, and no other.
 *
 * The test image's process is PID 1 of its container with no SIGTERM handler, so the
 * kernel ignores the signal and every removal takes the whole stop timeout: a long one,
 * so "while it stops" is seconds of margin, not a race. The reconciler is kept out of the
 * way of the test's own scales.
 */
const STOP_TIMEOUT_SECONDS = 20;

const containerStateOn = async (control: TestControl, name: string) =>
  (await podman(control, ['container', 'inspect', '--format', '{{.State.Status}}', name])).stdout.trim();
const untilStoppingOn = (control: TestControl, name: string) =>
  waitFor(`${name} stopping`, async () => ((await containerStateOn(control, name)) === 'stopping' ? true : undefined), 30_000, 50);

/** Scales the agent up by one through the driver; returns once the new replica's container was created. */
async function scaleUpOn(control: TestControl, agentId: string): Promise<void> {
  const before = (await control.driver.status(agentId))!.replicas.length;
  await control.driver.scale(agentId, before + 1);
  assert.equal((await control.driver.status(agentId))!.replicas.length, before + 1);
}

describe('podman: removals and stops outside the driver queue', function () {
  this.timeout(240_000);
  let control: TestControl;
  let token: string;

  before(async () => {
    control = await startControl({ STOP_TIMEOUT_SECONDS: String(STOP_TIMEOUT_SECONDS), RECONCILE_INTERVAL_SECONDS: '3600' }, { orchestrate: true });
  });

  // An account each: the free plan's replica limit counts every agent of one.
  beforeEach(async () => {
    ({ token } = await control.signUp());
  });

  after(async () => {
    await control?.close();
  });

  const containerState = (name: string) => containerStateOn(control, name);
  const exists = async (name: string) => (await podman(control, ['container', 'exists', name])).code === 0;
  const untilStopping = (name: string) => untilStoppingOn(control, name);
  const untilGone = (name: string) => waitFor(`${name} removed`, async () => (!(await exists(name)) ? true : undefined), (STOP_TIMEOUT_SECONDS + 30) * 1000);
  const scaleUp = (agentId: string) => scaleUpOn(control, agentId);

  it("an agent's deletion: another agent's scale completes while its container stops, then its container, network and token go", async () => {
    const neighbour = await createRunningAgent(control, token);
    const doomed = await createRunningAgent(control, token);
    const tokenDirectory = join(stateDirectoryOf(control.config.podman), 'agent-tokens', doomed.replica.id);
    assert.ok(existsSync(tokenDirectory), 'the replica has its token directory');

    const deleted = await control.request('DELETE', `/agents/${doomed.id}`, { token });
    assert.equal(deleted.status, 204, JSON.stringify(deleted.body));
    await untilStopping(doomed.replica.id);

    await scaleUp(neighbour.id);
    assert.equal(await containerState(doomed.replica.id), 'stopping', "the neighbour's scale did not wait for the deleted agent's removal");

    await untilGone(doomed.replica.id);
    await waitFor("the deleted agent's network removed", async () => (networkExists(`agent-${doomed.id}`) ? undefined : true), 30_000);
    // Ticks ran every PODMAN_POLL_INTERVAL_MS meanwhile, each listing the container while it stopped: none wrote its token again.
    await new Promise((resolve) => setTimeout(resolve, 1000));
    assert.equal(existsSync(tokenDirectory), false, 'its token directory went with it, and stayed gone');
  });

  it("a stray: another agent's scale completes while a container no job claims stops, then it goes", async () => {
    const neighbour = await createRunningAgent(control, token);
    const stray = `stray-${control.database}`;
    // What a control API that crashed after an agent's deletion leaves: a container of this instance no job claims.
    const run = await podman(control, [
      'run', '--detach', '--name', stray, '--network', 'none',
      '--label', `${LABEL.instance}=${control.config.podman.instance}`, '--label', `${LABEL.agentId}=agt_deletedwhiledown`,
      '--ulimit', 'nofile=1024:1024', '--ulimit', 'nproc=512:512', TEST_IMAGE,
    ]);
    assert.equal(run.code, 0, run.stderr);
    await untilStopping(stray);

    await scaleUp(neighbour.id);
    assert.equal(await containerState(stray), 'stopping', "the neighbour's scale did not wait for the stray's removal");
    await untilGone(stray);
  });

  it("a cold park: another agent's scale completes while the replica stops; a wake meanwhile starts that same replica once stopped", async () => {
    const neighbour = await createRunningAgent(control, token);
    const parked = await createRunningAgent(control, token);
    await control.driver.scale(parked.id, 0, { warmUntil: null });
    await untilStopping(parked.replica.id);

    await scaleUp(neighbour.id);
    assert.equal(await containerState(parked.replica.id), 'stopping', "the neighbour's scale did not wait for the park's stop");

    // A wake during the stop: it waits for that replica, and nothing else starts meanwhile.
    await control.driver.scale(parked.id, 1);
    assert.deepEqual((await control.driver.status(parked.id))!.replicas, [], 'no fresh replica beside the one stopping');
    assert.equal(await containerState(parked.replica.id), 'stopping');
    const woken = await waitFor('the same replica running again', async () => {
      const replicas = (await control.driver.status(parked.id))!.replicas;
      return replicas.length === 1 && replicas[0]!.state === 'running' && replicas[0]!.address ? replicas[0] : undefined;
    }, (STOP_TIMEOUT_SECONDS + 30) * 1000);
    assert.equal(woken.id, parked.replica.id, 'started again from its stopped container, not replaced');
    const events = (await control.driver.status(parked.id))!.events.filter((e) => e.replicaId === parked.replica.id).map((e) => e.type);
    assert.deepEqual(events.slice(events.lastIndexOf('parked')), ['parked', 'woken', 'ready'], events.join(', '));
    const containers = await podman(control, ['ps', '--all', '--filter', `label=${LABEL.agentId}=${parked.id}`, '--format', '{{.Names}}']);
    assert.deepEqual(containers.stdout.trim().split('\n'), [parked.replica.id]);
  });

  it("a warm period's end: another agent's scale completes while the thawed replica stops, then it stays stopped", async () => {
    const neighbour = await createRunningAgent(control, token);
    const parked = await createRunningAgent(control, token);
    // The driver lives in real time (test/support/control-harness.ts): a warm period of a few seconds.
    await control.driver.scale(parked.id, 0, { warmUntil: new Date(Date.now() + 6_000) });
    await waitFor('the parked replica frozen after its drain', async () => ((await containerState(parked.replica.id)) === 'paused' ? true : undefined), 5_000, 50);

    await untilStopping(parked.replica.id);
    await scaleUp(neighbour.id);
    assert.equal(await containerState(parked.replica.id), 'stopping', "the neighbour's scale did not wait for the cooling stop");
    await waitFor('the replica stopped (cold), and said so', async () => {
      const last = (await control.driver.status(parked.id))!.events.filter((e) => e.replicaId === parked.replica.id).at(-1);
      return last?.message === 'warm period over: stopped (cold)' ? true : undefined;
    }, (STOP_TIMEOUT_SECONDS + 30) * 1000);
    assert.equal(await containerState(parked.replica.id), 'exited');
  });

  it("an agent deleted while its parked replica stops: the deletion's removal meets the stop, and nothing of the agent is left", async () => {
    const parked = await createRunningAgent(control, token);
    await control.driver.scale(parked.id, 0, { warmUntil: null });
    await untilStopping(parked.replica.id);

    // podman lets an rm at a container another call is stopping (libpod's stop leaves it Stopping and unlocked).
    const deleted = await control.request('DELETE', `/agents/${parked.id}`, { token });
    assert.equal(deleted.status, 204, JSON.stringify(deleted.body));
    await untilGone(parked.replica.id);
    await waitFor("the deleted agent's network removed", async () => (networkExists(`agent-${parked.id}`) ? undefined : true), 30_000);
    // The stop's end, applied in the queue, finds the agent gone: it starts, records and adopts nothing.
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const left = await podman(control, ['ps', '--all', '--filter', `label=${LABEL.agentId}=${parked.id}`, '--format', '{{.Names}}']);
    assert.equal(left.stdout.trim(), '', 'no container of the deleted agent');
    assert.equal(await control.driver.status(parked.id), null, 'no job of it either');
  });

  it("a parked replica discarded: the owner's scale to 0 returns while it stops, then it goes", async () => {
    const parked = await createRunningAgent(control, token);
    await control.driver.scale(parked.id, 0, { warmUntil: new Date(Date.now() + 600_000) });
    await waitFor('the parked replica frozen after its drain', async () => ((await containerState(parked.replica.id)) === 'paused' ? true : undefined), 30_000);

    // A scale to 0 that does not park: the frozen replica is thawed, so that SIGTERM reaches it, and removed.
    await control.driver.scale(parked.id, 0);
    assert.ok(await exists(parked.replica.id), 'the scale returned before the removal ended');
    await untilStopping(parked.replica.id);
    await untilGone(parked.replica.id);
    const status = (await control.driver.status(parked.id))!;
    assert.deepEqual(status.replicas, [], 'not adopted again while it stopped');
  });
});

/**
 * The one restart the driver makes of a running replica: an adopted replica that mounts a
 * token directory other than the one this control API writes is restarted, so that podman
 * mounts the current one (supervisor.ts, remountTokens; test/podman-token-mount.test.ts).
 * Its stop waits the whole stop timeout too, and it runs beside the queue as well.
 */
describe('podman: a token-directory remount outside the driver queue', function () {
  this.timeout(240_000);
  const env = { STOP_TIMEOUT_SECONDS: String(STOP_TIMEOUT_SECONDS), RECONCILE_INTERVAL_SECONDS: '3600' };
  /** The control API running now: its close removes what it runs, which after the crash is all the first one started. */
  let running: TestControl | undefined;
  after(() => running?.close());

  it("another agent's scale completes while the replica restarts; then it runs, the same container, reading the current token", async () => {
    const first = await startControl(env, { orchestrate: true });
    running = first;
    const { token } = await first.signUp();
    const neighbour = await createRunningAgent(first, token);
    const remounted = await createRunningAgent(first, token);
    const tokenDirectory = join(stateDirectoryOf(first.config.podman), 'agent-tokens', remounted.replica.id);
    await first.crash();
    running = undefined;
    // What the next start sees when its /tmp is not the last one's: the same path, another directory.
    rmSync(tokenDirectory, { recursive: true, force: true });
    mkdirSync(tokenDirectory, { recursive: true });

    const control = await startControl(env, { orchestrate: true, resume: { database: first.database } });
    running = control;
    await untilStoppingOn(control, remounted.replica.id);
    await scaleUpOn(control, neighbour.id);
    assert.equal(await containerStateOn(control, remounted.replica.id), 'stopping', "the neighbour's scale did not wait for the remount's restart");

    const back = await waitFor('the replica running and routed again', async () => {
      const replicas = (await control.driver.status(remounted.id))!.replicas;
      return replicas.length === 1 && replicas[0]!.state === 'running' && replicas[0]!.address ? replicas[0] : undefined;
    }, (STOP_TIMEOUT_SECONDS + 30) * 1000);
    assert.equal(back.id, remounted.replica.id, 'the same container, restarted, not replaced');
    const seen = await podman(control, ['exec', remounted.replica.id, 'cat', '/run/agent-services/token']);
    assert.equal(seen.stdout.trim(), readFileSync(join(tokenDirectory, 'token'), 'utf8').trim(), 'it reads the token this control API writes');
  });
});
