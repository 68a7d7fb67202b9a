import assert from 'node:assert/strict';
import type { NomadDriver } from '../control/orchestrator/nomad/driver.js';
import { startFakeCluster, type FakeCluster } from './support/fake-nomad/index.js';
import { fakeClusterDriver, sampleSpec } from './support/nomad-samples.js';
import { waitFor } from './support/wait.js';

/**
 * A Variable write re-renders the template in every allocation at once, and a template
 * with change_mode "restart" restarts them all together, outside the update block's
 * max_parallel (nomad client/allocrunner/taskrunner/template/template.go,
 * `handleTemplateRerenders`; the fake plays it). A redeploy that changes a secret must
 * leave the running replicas alone and replace them through the rolling update.
 */
describe('nomad driver: a redeploy that changes a secret rolls like any other', function () {
  this.timeout(60_000);
  let cluster: FakeCluster;
  let driver: NomadDriver;

  before(async () => {
    cluster = await startFakeCluster({ simulate: true });
    driver = fakeClusterDriver(cluster, { NOMAD_WATCH_MIN_INTERVAL_MS: '50' });
  });
  after(async () => {
    await driver?.close();
    await cluster?.close();
  });

  it('restarts no running replica when the Variable changes; the new version replaces them', async () => {
    const spec = sampleSpec({ count: 3, scaling: { enabled: false, min: 1, max: 5 }, secretEnv: { OPENAI_API_KEY: 'sk-old' } });
    await driver.submit(spec);
    const jobId = `agent-${spec.agentId}`;
    await waitFor('three replicas running', async () => ((await driver.status(spec.agentId))!.replicas.filter((r) => r.state === 'running').length === 3 ? true : undefined));
    const old = cluster.allocations(jobId).filter((a) => a.DesiredStatus === 'run').map((a) => a.ID as string);

    await driver.submit({ ...spec, version: spec.version + 1, secretEnv: { OPENAI_API_KEY: 'sk-rotated' } });
    assert.deepEqual(cluster.variable(`nomad/jobs/${jobId}`)!.Items, { OPENAI_API_KEY: 'sk-rotated' });
    await waitFor('the new version running', async () => {
      const replicas = (await driver.status(spec.agentId))!.replicas;
      return replicas.filter((r) => r.state === 'running' && r.version === spec.version + 1).length === 3 ? true : undefined;
    });

    await waitFor('the old replicas stopped', async () => (cluster.allocations(jobId).filter((a) => old.includes(a.ID)).every((a) => a.DesiredStatus === 'stop') ? true : undefined));
    for (const allocation of cluster.allocations(jobId).filter((a) => old.includes(a.ID))) {
      const task = allocation.TaskStates.agent;
      assert.equal(task.Restarts, 0, `replica ${allocation.ID} was restarted by the Variable write`);
      assert.equal(task.Events.some((e: { Type: string }) => e.Type === 'Restart Signaled'), false);
      assert.equal(allocation.DesiredStatus, 'stop', 'replaced by the rollout');
    }
  });
});
