import assert from 'node:assert/strict';
import type { NomadDriver } from '../control/orchestrator/nomad/driver.js';
import { startFakeCluster, type FakeCluster } from './support/fake-nomad/index.js';
import { fakeClusterDriver, sampleSpec } from './support/nomad-samples.js';
import { waitFor } from './support/wait.js';

/**
 * The control API runs two copies, and a scale can land on the copy that did not deploy.
 * Right after a deploy Nomad refuses the scale endpoint (the deploy's deployment is active:
 * nomad/job_endpoint.go, `Job.Scale`), and the driver then registers the job itself. It must
 * register what Nomad runs with the new count, as Job.Scale would have, never the older
 * spec this copy holds: that would roll the other copy's deploy back.
 */
describe('nomad driver: a scale on the copy that did not deploy', function () {
  this.timeout(60_000);
  let cluster: FakeCluster;
  const drivers: NomadDriver[] = [];

  before(async () => {
    // MinHealthyTime waited up to 3 s: the deploy's deployment is still running when the scale comes.
    cluster = await startFakeCluster({ simulate: true, minHealthyTimeCapMs: 3_000 });
    for (let copy = 0; copy < 2; copy += 1) drivers.push(fakeClusterDriver(cluster, { NOMAD_WATCH_MIN_INTERVAL_MS: '50' }));
  });
  after(async () => {
    await Promise.all(drivers.map((driver) => driver.close()));
    await cluster?.close();
  });

  it('keeps the version the other copy deployed and sets the count', async () => {
    const [deployer, scaler] = drivers as [NomadDriver, NomadDriver];
    const spec = sampleSpec({ count: 1, scaling: { enabled: false, min: 1, max: 5 }, secretEnv: { OPENAI_API_KEY: 'sk-1' } });
    const jobId = `agent-${spec.agentId}`;
    await deployer.submit(spec);
    await scaler.reconcile([spec]); // what each copy holds after its start
    await waitFor('version 1 running', async () => ((await scaler.status(spec.agentId))!.replicas.some((r) => r.state === 'running') ? true : undefined));

    const next = { ...spec, version: spec.version + 1, secretEnv: { OPENAI_API_KEY: 'sk-2' } };
    await deployer.submit(next);
    await scaler.scale(spec.agentId, 2);

    const job = cluster.job(jobId)!;
    assert.equal(job.Meta.agent_version, String(next.version), 'the deploy of the other copy is not rolled back');
    assert.equal(job.TaskGroups[0].Count, 2);
    assert.deepEqual(cluster.variable(`nomad/jobs/${jobId}`)!.Items, { OPENAI_API_KEY: 'sk-2' }, 'a scale leaves the secrets alone');
    await waitFor('two replicas of the new version', async () => {
      const replicas = (await deployer.status(spec.agentId))!.replicas;
      return replicas.length === 2 && replicas.every((r) => r.state === 'running' && r.version === next.version) ? true : undefined;
    }, 30_000);
  });
});
