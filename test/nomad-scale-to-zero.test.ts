import assert from 'node:assert/strict';
import type { NomadDriver } from '../control/orchestrator/nomad/driver.js';
import { startFakeCluster, type FakeCluster } from './support/fake-nomad/index.js';
import { fakeClusterDriver, sampleSpec } from './support/nomad-samples.js';
import { waitFor } from './support/wait.js';
import { edgeKeyNames, WAKE_REQUESTED } from '../contract/edge-keys.js';
import { startControl, type TestControl } from './support/control-harness.js';

/**
 * Parking and waking on Nomad (issue 19): the platform parks through the driver's scale
 * call, count 0, and the fake Nomad, which ports Nomad's own ScalingPolicy and TaskGroup
 * validation (test/support/fake-nomad/validate/), takes the job at count 0 with Min 0.
 */
describe('nomad driver: scale to zero and back', function () {
  this.timeout(60_000);
  let cluster: FakeCluster;
  let driver: NomadDriver;
  const agentId = 'agt_Park00000000000000001';

  before(async () => {
    cluster = await startFakeCluster({ simulate: true });
    driver = fakeClusterDriver(cluster, { NOMAD_WATCH_MIN_INTERVAL_MS: '250' });
  });
  after(async () => {
    await driver?.close();
    await cluster?.close();
  });

  const running = async () => (await driver.status(agentId))?.replicas.filter((r) => r.state === 'running' && r.address).length ?? 0;

  it('parks an auto-scaled job at count 0 (Scaling Min widened to 0) and wakes it to 1 through the same scale call, Min back at 1', async () => {
    // What jobSpecFor gives an agent with min_replicas 0: the Nomad Autoscaler's floor stays 1.
    const spec = sampleSpec({ agentId, slug: 'park-x7k2p9qa', count: 1, secretEnv: {}, scaling: { enabled: true, min: 1, max: 3 } });
    await driver.submit(spec);
    await waitFor('one replica running', async () => ((await running()) === 1 ? true : undefined), 30_000);

    await driver.scale(agentId, 0);
    const parked: any = await cluster.job(`agent-${agentId}`);
    assert.equal(parked.TaskGroups[0].Count, 0);
    assert.deepEqual([parked.TaskGroups[0].Scaling.Min, parked.TaskGroups[0].Scaling.Max, parked.TaskGroups[0].Scaling.Enabled], [0, 3, true]);
    await waitFor('no replica', async () => ((await running()) === 0 ? true : undefined), 30_000);

    await driver.scale(agentId, 1);
    await waitFor('woken: one replica running', async () => ((await running()) === 1 ? true : undefined), 30_000);
    const woken: any = await cluster.job(`agent-${agentId}`);
    assert.equal(woken.TaskGroups[0].Count, 1);
    // Job.Scale would have left Min at 0, and the Nomad Autoscaler free to park the agent itself.
    assert.deepEqual([woken.TaskGroups[0].Scaling.Min, woken.TaskGroups[0].Scaling.Max, woken.TaskGroups[0].Scaling.Enabled], [1, 3, true], "the Autoscaler's floor is 1 again");
  });

  it("re-registers the job as read without the constraints Nomad's mutators add: after parks and wakes, still one of each", async () => {
    const other = 'agt_Park00000000000000002';
    await driver.submit(sampleSpec({ agentId: other, slug: 'park-y7k2p9qb', count: 1, secretEnv: {}, scaling: { enabled: true, min: 1, max: 3 } }));
    const constraints = () => ((cluster.job(`agent-${other}`) as any).TaskGroups[0].Constraints as { LTarget: string }[]).map((c) => c.LTarget);
    assert.deepEqual(constraints(), ['${attr.consul.version}', '${attr.nomad.version}'], 'what Nomad adds to a registration');
    for (const count of [0, 1, 0, 1]) await driver.scale(other, count);
    assert.equal(cluster.job(`agent-${other}`)!.Version, 4, 'each scale registered the job over what was read');
    assert.deepEqual(constraints(), ['${attr.consul.version}', '${attr.nomad.version}']);
  });
});

describe('scale to zero on Nomad, through the control API (fake Nomad, simulated allocations)', function () {
  this.timeout(120_000);
  let cluster: FakeCluster;
  let control: TestControl;

  before(async () => {
    cluster = await startFakeCluster({ simulate: true });
    control = await startControl({}, { nomad: cluster });
    control.control.loops.wakes!.start();
  });
  after(async () => {
    await control?.control.loops.wakes?.stop();
    await control?.close();
    await cluster?.close();
  });

  const countOf = async (agentId: string) => ((await cluster.job(`agent-${agentId}`)) as any).TaskGroups[0].Count as number;
  /** What authz does for the first Check of a wake. */
  async function requestWake(agent: { id: string; url: string }) {
    await control.redis.set(edgeKeyNames.wake(new URL(agent.url).hostname.split('.')[0]!), WAKE_REQUESTED, 'EX', 30);
    await control.redis.lpush(edgeKeyNames.wakeQueue, agent.id);
  }

  it('parks the job at count 0 and wakes it to 1 by the same driver scale call, and wakes it again after something else took it to 0', async () => {
    const { token } = await control.signUp();
    const created = await control.request('POST', '/agents', {
      token, body: { name: 'nomad-sleeper', api_key: 'sk-test', deploy: { replicas: 1, auto_scale: true, min_replicas: 0, max_replicas: 3 } },
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const agent = created.body;
    const shown = async () => (await control.request('GET', `/agents/${agent.id}`, { token })).body;
    await waitFor('running', async () => ((await shown()).status === 'running' ? true : undefined), 60_000);
    // The Nomad Autoscaler's floor is 1: it cannot see the edge.
    assert.equal(((await cluster.job(`agent-${agent.id}`)) as any).TaskGroups[0].Scaling.Min, 1);

    assert.equal(await control.control.services.platformScaling.park(agent.id, 1), true);
    await waitFor('job at count 0', async () => ((await countOf(agent.id)) === 0 ? true : undefined), 30_000);
    await waitFor('parked: running with 0 replicas', async () => {
      const now = await shown();
      return now.status === 'running' && now.replicas === 0 ? true : undefined;
    }, 30_000);

    await requestWake(agent);
    await waitFor('woken: job at count 1', async () => ((await countOf(agent.id)) === 1 ? true : undefined), 30_000);
    await waitFor('one replica', async () => ((await shown()).replicas === 1 ? true : undefined), 30_000);

    // The woken job's scaling block has Min 1 again: the Nomad Autoscaler keeps it at 1 or more.
    assert.equal(((await cluster.job(`agent-${agent.id}`)) as any).TaskGroups[0].Scaling.Min, 1);
    // Something else takes it to 0 behind the API's back (an operator's `nomad job scale`).
    await control.driver!.scale(agent.id, 0);
    assert.equal(await countOf(agent.id), 0);
    await requestWake(agent);
    await waitFor('the count asked for, handed to Nomad again', async () => ((await countOf(agent.id)) === 1 ? true : undefined), 30_000);
  });
});
