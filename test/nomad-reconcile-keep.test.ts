import assert from 'node:assert/strict';
import type { NomadDriver } from '../control/orchestrator/nomad/driver.js';
import { planReconcile } from '../control/orchestrator/nomad/reconcile.js';
import { startFakeCluster, type FakeCluster } from './support/fake-nomad/index.js';
import { fakeClusterDriver, sampleSpec } from './support/nomad-samples.js';
import { waitFor } from './support/wait.js';

const healthy = sampleSpec({ agentId: 'agt_Keep0Healthy000000001', slug: 'healthy-x7k2p9qa', count: 1, scaling: { enabled: false, min: 1, max: 1 } });
const kept = sampleSpec({ agentId: 'agt_Keep0Kept00000000001', slug: 'kept-x7k2p9qa', count: 1, scaling: { enabled: false, min: 1, max: 1 } });
const gone = sampleSpec({ agentId: 'agt_Keep0Gone00000000001', slug: 'gone-x7k2p9qa', count: 1, secretEnv: {}, scaling: { enabled: false, min: 1, max: 1 } });

/**
 * `reconcile(specs, { keep })` on Nomad, against the strict fake cluster: after a restart
 * of the control API (a new driver that holds no job), an agent whose job could not be
 * built keeps its job, its Variable and its allocations, while a job no one wants is
 * removed as before.
 */
describe('nomad driver: reconcile keeps the jobs it is told to keep', function () {
  this.timeout(60_000);
  let cluster: FakeCluster;
  const drivers: NomadDriver[] = [];
  const newDriver = () => {
    const driver = fakeClusterDriver(cluster, { NOMAD_WATCH_MIN_INTERVAL_MS: '250' });
    drivers.push(driver);
    return driver;
  };
  const liveAllocations = (spec: typeof kept) => cluster.allocations(`agent-${spec.agentId}`).filter((a) => a.DesiredStatus === 'run').map((a) => a.ID).sort();

  before(async () => {
    cluster = await startFakeCluster({ simulate: true });
  });
  after(async () => {
    for (const driver of drivers) await driver.close();
    await cluster?.close();
  });

  it('leaves a kept job, its Variable and its allocations untouched, and removes a job no one wants', async () => {
    const first = newDriver();
    for (const spec of [healthy, kept, gone]) await first.submit(spec);
    await waitFor('each job to have a running allocation', async () => ([healthy, kept, gone].every((spec) => liveAllocations(spec).length === 1) ? true : undefined));
    const keptJob = structuredClone(cluster.job(`agent-${kept.agentId}`));
    const keptAllocations = liveAllocations(kept);
    await first.close();

    // The control API restarted, and the kept agent's job cannot be built this time.
    const second = newDriver();
    const from = cluster.requests.length;
    await second.reconcile([healthy], { keep: [kept.agentId] });

    assert.equal(cluster.job(`agent-${gone.agentId}`), undefined, 'the unwanted job is removed');
    assert.equal(cluster.variable(`nomad/jobs/agent-${gone.agentId}`), undefined, "the unwanted job's Variable is removed");
    assert.deepEqual(cluster.job(`agent-${kept.agentId}`), keptJob, 'the kept job is exactly as it was');
    assert.deepEqual(cluster.variable(`nomad/jobs/agent-${kept.agentId}`)?.Items, kept.secretEnv, "the kept job's Variable is still there");
    assert.deepEqual(liveAllocations(kept), keptAllocations, "the kept job's allocations run on");
    const writesToKept = cluster.requests.slice(from).filter((r) => r.method !== 'GET' && r.path.includes(kept.agentId));
    assert.deepEqual(writesToKept, [], 'nothing was written for the kept job');
    assert.notEqual(cluster.job(`agent-${healthy.agentId}`), undefined);
    assert.notEqual(await second.status(healthy.agentId), null, 'the healthy job is adopted');
  });

  it('plans neither a submit nor a removal for a kept agent', () => {
    const existing = new Map([[kept.agentId, { ID: `agent-${kept.agentId}`, Version: 0, Stop: false, Meta: { agent_version: '1' }, TaskGroups: [] }]]);
    assert.deepEqual(planReconcile([], existing, [kept.agentId]), []);
    assert.deepEqual(planReconcile([], existing), [{ kind: 'remove', agentId: kept.agentId }]);
  });
});
