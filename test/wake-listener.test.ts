import assert from 'node:assert/strict';
import pino from 'pino';
import { edgeKeyNames, WAKE_REFUSED_PREFIX, WAKE_REQUESTED } from '../contract/edge-keys.js';
import { WakeListener } from '../control/services/wake-listener.js';
import { startControl, type TestControl } from './support/control-harness.js';
import { createAgent } from './support/control-api.js';
import { waitFor } from './support/wait.js';

/**
 * The control API's half of a wake on real Postgres and Redis (no containers: the agent's
 * rows are what it changes): what authz queues is taken by a blocking read, scaled to 1
 * through PlatformScaling with the plan's quota, or refused with a body naming it.
 */
describe('wake listener (control/services/wake-listener.ts)', function () {
  this.timeout(30_000);
  let control: TestControl;
  let listener: WakeListener | undefined;

  before(async () => {
    control = await startControl();
  });
  afterEach(async () => {
    await listener?.stop();
    listener = undefined;
  });
  after(async () => control?.close());

  const zeroable = { replicas: 1, auto_scale: true, min_replicas: 0, max_replicas: 3 };
  const rowOf = (id: string) => control.db('agents').where({ id }).first();
  const startListener = () => {
    const { platformScaling, edge } = control.control.services;
    listener = new WakeListener(control.redis, platformScaling, edge, pino({ level: 'silent' }));
    listener.start();
  };
  /** What authz does for the first Check of a wake. */
  const requestWake = async (agent: { id: string; url: string }) => {
    await control.redis.set(edgeKeyNames.wake(slugOf(agent)), WAKE_REQUESTED, 'EX', 30);
    await control.redis.lpush(edgeKeyNames.wakeQueue, agent.id);
  };
  const slugOf = (agent: { url: string }) => new URL(agent.url).hostname.split('.')[0]!;

  it('takes a wake recorded while no listener ran, and scales the parked agent to 1', async () => {
    const { token } = await control.signUp();
    const agent = await createAgent(control, token, { deploy: zeroable });
    assert.equal(await control.control.services.platformScaling.park(agent.id, 1), true);
    const parked = await rowOf(agent.id);
    assert.deepEqual([parked.desired_replicas, parked.status, parked.parked_at !== null], [0, 'running', true]);

    await requestWake(agent);
    startListener();
    const woken = await waitFor('woken', async () => {
      const row = await rowOf(agent.id);
      return row.desired_replicas === 1 ? row : undefined;
    });
    assert.equal(woken.parked_at, null);
    assert.equal(await control.redis.llen(edgeKeyNames.wakeQueue), 0);
    // Its owner's deploy keeps the count it asked for; parking did not change it.
    assert.equal(woken.deploy.replicas, 1);
  });

  it('refuses a wake the plan has no room for: the wake key carries the 503 body naming the quota, and nothing starts', async () => {
    const { token } = await control.signUp();
    const agent = await createAgent(control, token, { deploy: zeroable });
    assert.equal(await control.control.services.platformScaling.park(agent.id, 1), true);
    // The free plan's 3 replicas, all taken while it was parked.
    await createAgent(control, token, { name: 'busy', deploy: { replicas: 3, max_replicas: 3 } });

    startListener();
    await requestWake(agent);
    const value = await waitFor('refused', async () => {
      const current = await control.redis.get(edgeKeyNames.wake(slugOf(agent)));
      return current?.startsWith(WAKE_REFUSED_PREFIX) ? current : undefined;
    });
    assert.equal(
      value.slice(WAKE_REFUSED_PREFIX.length),
      "service unavailable: the agent is parked and cannot start: the account's plan quota max_replicas is 3, starting it needs 4\n",
    );
    const row = await rowOf(agent.id);
    assert.deepEqual([row.desired_replicas, row.status], [0, 'running'], 'still parked');
  });

  it('leaves an agent its owner stopped alone: a wake is only for a parked one', async () => {
    const { token } = await control.signUp();
    const agent = await createAgent(control, token, { deploy: { ...zeroable, replicas: 0 } });
    startListener();
    await requestWake(agent);
    await waitFor('taken from the queue', async () => ((await control.redis.llen(edgeKeyNames.wakeQueue)) === 0 ? true : undefined));
    await listener!.stop(); // waits for the wake being handled
    listener = undefined;
    assert.equal((await rowOf(agent.id)).desired_replicas, 0);
  });
});
