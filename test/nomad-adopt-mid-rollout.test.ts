import assert from 'node:assert/strict';
import type { NomadDriver } from '../control/orchestrator/nomad/driver.js';
import { startFakeCluster, type FakeCluster } from './support/fake-nomad/index.js';
import { fakeClusterDriver, sampleSpec } from './support/nomad-samples.js';
import { waitFor } from './support/wait.js';

/**
 * The control API restarts while a rollout is under way: Nomad still runs the previous
 * version's allocation beside the new one until the new one has been healthy for
 * MinHealthyTime. The copy that starts must show each replica under the agent version it
 * runs, read from the Meta of the Nomad job version behind it (GET /v1/job/:id/versions),
 * not take the old one for the new: that would show the rollout done while the old code
 * still serves.
 */
describe('nomad driver: adopting a job in the middle of a rollout', function () {
  this.timeout(60_000);
  let cluster: FakeCluster;
  const drivers: NomadDriver[] = [];

  before(async () => {
    // MinHealthyTime (10 s) waited in full: the old allocation is still running when the new copy starts.
    cluster = await startFakeCluster({ simulate: true, minHealthyTimeCapMs: 30_000 });
  });
  after(async () => {
    await Promise.all(drivers.map((driver) => driver.close()));
    await cluster?.close();
  });

  const startDriver = () => {
    const driver = fakeClusterDriver(cluster, { NOMAD_WATCH_MIN_INTERVAL_MS: '50' });
    drivers.push(driver);
    return driver;
  };

  it('shows the old replica under the old version and the new one under the new', async () => {
    const first = startDriver();
    const spec = sampleSpec({ count: 1, scaling: { enabled: false, min: 1, max: 5 } });
    await first.submit(spec);
    await waitFor('the first version running', async () => ((await first.status(spec.agentId))!.replicas.some((r) => r.state === 'running') ? true : undefined));
    const next = { ...spec, version: spec.version + 1 };
    await first.submit(next);
    await waitFor('a replica of each version', async () => (cluster.allocations(`agent-${spec.agentId}`).filter((a) => a.DesiredStatus === 'run').length === 2 ? true : undefined));

    // The control API restarts: a new driver that only knows what Postgres says.
    const restarted = startDriver();
    await restarted.reconcile([next]);
    const replicas = (await restarted.status(spec.agentId))!.replicas;
    assert.deepEqual(replicas.map((replica) => replica.version).sort(), [spec.version, next.version]);
  });

  it('reads no version history for a job whose allocations all run its current version', async function () {
    const spec = sampleSpec({ count: 1, scaling: { enabled: false, min: 1, max: 5 } });
    const jobId = `agent-${spec.agentId}`;
    // The rollout above ends once the new replica has been healthy for MinHealthyTime.
    await waitFor('the rollout over', async () => {
      const running = cluster.allocations(jobId).filter((a) => a.DesiredStatus === 'run');
      return running.length === 1 && running[0]!.JobVersion === cluster.job(jobId)!.Version ? true : undefined;
    }, 30_000);
    const before = cluster.requests.length;
    const restarted = startDriver();
    await restarted.reconcile([{ ...spec, version: spec.version + 1 }]);
    const versionReads = cluster.requests.slice(before).filter((request) => request.path.endsWith('/versions'));
    assert.deepEqual(versionReads, []);
    assert.deepEqual((await restarted.status(spec.agentId))!.replicas.map((replica) => replica.version), [spec.version + 1]);
  });
});
