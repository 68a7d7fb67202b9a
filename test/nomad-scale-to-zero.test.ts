import assert from 'node:assert/strict';
import pino from 'pino';
import { systemClock } from '../contract/clock.js';
import { createNomadDriver } from '../control/orchestrator/create.js';
import type { NomadDriver } from '../control/orchestrator/nomad/driver.js';
import { startFakeCluster, type FakeCluster } from './support/fake-nomad/index.js';
import { defaultNomadSettings, sampleSpec } from './support/nomad-samples.js';
import { waitFor } from './support/wait.js';

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
    driver = createNomadDriver(defaultNomadSettings({
      NOMAD_ADDR: cluster.nomadAddr, NOMAD_TOKEN: cluster.nomadToken, CONSUL_HTTP_ADDR: cluster.consulAddr, CONSUL_HTTP_TOKEN: cluster.consulToken,
      NOMAD_WATCH_MIN_INTERVAL_MS: '250',
    }), systemClock, pino({ level: 'silent' }));
  });
  after(async () => {
    await driver?.close();
    await cluster?.close();
  });

  const running = async () => (await driver.status(agentId))?.replicas.filter((r) => r.state === 'running' && r.address).length ?? 0;

  it('parks an auto-scaled job at count 0 (Scaling Min widened to 0) and wakes it to 1 through the same scale call', async () => {
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
    assert.equal(((await cluster.job(`agent-${agentId}`)) as any).TaskGroups[0].Count, 1);
  });
});
