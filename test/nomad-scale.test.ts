import assert from 'node:assert/strict';
import type { NomadDriver } from '../control/orchestrator/nomad/driver.js';
import { startFakeCluster, type FakeCluster } from './support/fake-nomad/index.js';
import { fakeClusterDriver, sampleSpec } from './support/nomad-samples.js';
import { waitFor } from './support/wait.js';

const AGENTS = 1000;
const agentId = (i: number) => `agt_Scale${String(i).padStart(15, '0')}`;

/**
 * 1,000 agents on one control copy, against a fake that refuses connections past Nomad's
 * and Consul's default per-address limits (100 and 200) with their own 429. The design
 * must hold 5,000 (docs/nomad.md, "How the driver scales"); the fake plays allocations
 * without containers here, so only the driver's traffic is under test.
 */
describe('nomad driver: 1,000 agents within Nomad’s and Consul’s connection limits', function () {
  this.timeout(300_000);
  let cluster: FakeCluster;
  let driver: NomadDriver;
  const changed = new Set<string>();

  before(async () => {
    cluster = await startFakeCluster({ simulate: true });
    driver = fakeClusterDriver(cluster, { NOMAD_WATCH_MIN_INTERVAL_MS: '250' });
    driver.onChange((id) => changed.add(id));
  });
  after(async () => {
    await driver?.close();
    await cluster?.close();
  });

  it('registers and follows every agent to running without a refused connection, and keeps the watches at two', async () => {
    const specs = Array.from({ length: AGENTS }, (_, i) => sampleSpec({ agentId: agentId(i), slug: `scale-${i}-x7k2p9qa`, count: 1, secretEnv: {} }));
    // What the control API does on start: reconcile everything, while status reads pour in.
    const reconciling = driver.reconcile(specs);
    const readers = Array.from({ length: 50 }, async (_, lane) => {
      for (let i = lane; i < AGENTS; i += 50) await driver.status(agentId(i));
    });
    await Promise.all([reconciling, ...readers]);

    await waitFor('every agent running', async () => {
      const statuses = await Promise.all(specs.map((spec) => driver.status(spec.agentId)));
      return statuses.every((status) => status?.replicas.some((replica) => replica.state === 'running' && replica.address)) ? true : undefined;
    }, 120_000);

    const { nomad, consul } = cluster.connections;
    console.log(`      connections: Nomad peak ${nomad.peak} (limit ${nomad.limit}), Consul peak ${consul.peak} (limit ${consul.limit})`);
    assert.equal(nomad.refused + consul.refused, 0, 'no connection refused with a 429');
    assert.ok(nomad.peak <= nomad.limit, `Nomad: ${nomad.peak} connections at once`);
    assert.ok(consul.peak <= consul.limit, `Consul: ${consul.peak} connections at once`);
    assert.equal(cluster.requests.filter((r) => r.status === 429).length, 0);

    const perAgentReads = cluster.requests.filter((r) => /^\/v1\/job\/[^/]+\/allocations$|^\/v1\/health\/service\//.test(r.path));
    assert.equal(perAgentReads.length, 0, 'no per-agent allocation polls or Consul watches');
    const watchQueries = cluster.requests.filter((r) => r.path === '/v1/allocations' || r.path.startsWith('/v1/health/state/'));
    assert.ok(watchQueries.length > 0 && watchQueries.length < 400, `${watchQueries.length} watch queries for ${AGENTS} agents`);
  });

  it('tells the listeners about one agent whose replica changed, from the watches alone', async () => {
    const id = agentId(AGENTS - 1);
    const [allocation] = cluster.allocations(`agent-${id}`).filter((a) => a.DesiredStatus === 'run');
    changed.clear();
    const before = cluster.requests.length;
    const started = Date.now();
    cluster.setHealthy(allocation!.ID, false);
    await waitFor('the change to reach the listeners', async () => (changed.has(id) ? true : undefined), 30_000);
    console.log(`      status latency: ${Date.now() - started} ms from a failing check to the listeners`);
    const status = await driver.status(id);
    assert.deepEqual(status!.replicas.map((replica) => replica.state), ['starting'], 'not routable while its check fails');
    assert.deepEqual([...changed], [id], 'only the agent that changed');
    const calls = cluster.requests.slice(before).filter((r) => r.path !== '/v1/allocations' && !r.path.startsWith('/v1/health/state/'));
    assert.deepEqual(calls, [], 'nothing but the two watches asked');
  });
});
