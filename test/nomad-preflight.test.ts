import assert from 'node:assert/strict';
import { consulClient, nomadClient } from '../control/orchestrator/nomad/http-client.js';
import { preflight } from '../control/orchestrator/nomad/preflight.js';
import { startFakeCluster, type FakeCluster } from './support/fake-nomad/index.js';
import { fakeClusterSettings } from './support/nomad-samples.js';

/** What keeps every agent from running is said at start, with how to fix it. */
describe('nomad driver: start-up checks', function () {
  this.timeout(30_000);
  let cluster: FakeCluster;
  before(async () => {
    cluster = await startFakeCluster({ simulate: true, nodePools: [] });
  });
  after(async () => cluster?.close());

  const check = (env: Record<string, string>) => {
    const settings = fakeClusterSettings(cluster, env);
    return preflight(nomadClient(settings.nomad, 2000, 1, 4), consulClient(settings.consul, 2000, 1, 4), settings);
  };

  it('names a missing agent node pool, which Nomad would refuse every agent job for', async () => {
    const problems = await check({});
    assert.deepEqual(problems.map((p) => p.setting), ['NOMAD_AGENT_NODE_POOL']);
    assert.match(problems[0]!.message, /no node pool "agents".*nomad node pool apply/);
    assert.deepEqual(await check({ NOMAD_AGENT_NODE_POOL: 'default' }), [], 'an existing pool passes');
  });

  it('names a Consul it cannot reach, and says where a default agent listens', async () => {
    const problems = await check({ NOMAD_AGENT_NODE_POOL: 'default', CONSUL_HTTP_ADDR: 'http://127.0.0.1:9' });
    assert.deepEqual(problems.map((p) => p.setting), ['CONSUL_HTTP_ADDR']);
    assert.match(problems[0]!.message, /client_addr/);
  });
});
