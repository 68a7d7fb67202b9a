import assert from 'node:assert/strict';
import { edgeKeyNames } from '../contract/edge-keys.js';
import { startControl, type TestControl } from './support/control-harness.js';
import { startFakeCluster } from './support/fake-nomad/index.js';
import { lifecycleSuite } from './support/lifecycle-suite.js';
import { waitFor } from './support/wait.js';

type FakeCluster = Awaited<ReturnType<typeof startFakeCluster>>;

const TERMINAL = ['complete', 'failed', 'lost'];
const liveAllocations = async (cluster: FakeCluster, agentId: string) =>
  (await cluster.allocations(`agent-${agentId}`)).filter((a: any) => !TERMINAL.includes(a.ClientStatus) && a.DesiredStatus === 'run').length;
const leftovers = async (cluster: FakeCluster, agentId: string) => [
  ...((await cluster.job(`agent-${agentId}`)) ? [`job agent-${agentId}`] : []),
  ...((await cluster.variable(`nomad/jobs/agent-${agentId}`)) ? [`variable nomad/jobs/agent-${agentId}`] : []),
];

// One cluster per suite: the harness's control reconciles Nomad's agent-* jobs to its own database.
let suiteCluster: FakeCluster;
lifecycleSuite({
  name: 'nomad (fake cluster)',
  start: async () => {
    suiteCluster = await startFakeCluster({});
    return startControl({}, { nomad: suiteCluster });
  },
  replicasLeft: (_control, agentId) => liveAllocations(suiteCluster, agentId),
  leftovers: (_control, agentId) => leftovers(suiteCluster, agentId),
  silentReplica: 'never-routed',
  finish: async () => suiteCluster?.close(),
});

describe('agents on nomad (fake cluster): secrets and the Consul watch', function () {
  this.timeout(180_000);
  let cluster: FakeCluster;
  let control: TestControl;

  before(async () => {
    cluster = await startFakeCluster({});
    control = await startControl({}, { nomad: cluster });
  });
  after(async () => {
    await control?.close();
    await cluster?.close();
  });

  async function createRunning(token: string, body: Record<string, unknown>) {
    const created = await control.request('POST', '/agents', { token, body });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    await waitFor('running', async () => ((await control.request('GET', `/agents/${created.body.id}`, { token })).body.status === 'running' ? true : undefined), 90_000);
    return created.body;
  }

  it('keeps secrets in the Variable, out of the job, and the container sees them', async () => {
    const { token } = await control.signUp();
    const secret = 'sv-secret value=with "quotes"';
    const agent = await createRunning(token, {
      name: 'secret-agent',
      model: 'gpt-4o',
      api_key: 'sk-test-nomad-key',
      deploy: { replicas: 1, env: [{ key: 'PLAIN_SETTING', value: 'plain-value' }, { key: 'SECRET_TOKEN', value: secret, secret: true }] },
    });
    const variable: any = await cluster.variable(`nomad/jobs/agent-${agent.id}`);
    assert.deepEqual(variable.Items, { OPENAI_API_KEY: 'sk-test-nomad-key', SECRET_TOKEN: secret });
    const job: any = await cluster.job(`agent-${agent.id}`);
    const text = JSON.stringify(job);
    assert.equal(text.includes('sk-test-nomad-key'), false, 'the model key is not in the job');
    assert.equal(text.includes('sv-secret'), false, 'the secret env is not in the job');
    assert.equal(job.TaskGroups[0].Tasks[0].Env.PLAIN_SETTING, 'plain-value');

    const status = await control.driver!.status(agent.id);
    const address = status!.replicas.find((r) => r.state === 'running')!.address;
    const env = await (await fetch(`http://${address}/cgi-bin/env`)).text();
    assert.match(env, /^OPENAI_API_KEY=sk-test-nomad-key$/m);
    assert.ok(env.split('\n').includes(`SECRET_TOKEN=${secret}`), `the secret did not arrive intact:\n${env}`);
  });

  it('writes the addresses of replicas Consul reports passing into the Redis projection, and resumes the watch with the same index after Consul fails', async () => {
    const { token } = await control.signUp();
    const agent = await createRunning(token, { name: 'watched', api_key: 'sk-test', deploy: { replicas: 1 } });
    const slug = new URL(agent.url).hostname.split('.')[0]!;
    const upstreams = () => control.redis.smembers(edgeKeyNames.upstreams(slug));
    const [address] = await waitFor('the address in the projection', async () => {
      const members = await upstreams();
      return members.length === 1 ? members : undefined;
    });
    const status = await control.driver!.status(agent.id);
    assert.equal(address, status!.replicas[0]!.address);
    assert.equal((await fetch(`http://${address}/health`)).status, 200);

    // One watch over every agent's checks, not one per agent.
    const healthQueries = () => cluster.requests.filter((r: any) => r.path === '/v1/health/state/any');
    const before = healthQueries().length;
    cluster.failConsul(3);
    await control.request('POST', `/agents/${agent.id}/scale`, { token, body: { direction: 'up', count: 1 } });
    await waitFor('two addresses in the projection', async () => ((await upstreams()).length === 2 ? true : undefined), 90_000);
    // The watch backs off after a failure, then asks again with the index it had.
    const after = await waitFor('the watch to resume after the failures', async () => {
      const queries = healthQueries().slice(before);
      const lastFailed = queries.map((r) => (r.status ?? 0) >= 500).lastIndexOf(true);
      return lastFailed >= 0 && queries.length > lastFailed + 1 ? queries : undefined; // the next query may still be blocking
    }, 20_000).catch((error) => {
      throw new Error(`${error.message}: ${JSON.stringify(cluster.requests.filter((r) => r.api === 'consul').slice(-12))}`);
    });
    const failed = after.filter((r) => (r.status ?? 0) >= 500);
    const resumed = after[after.indexOf(failed[failed.length - 1]!) + 1];
    assert.equal(resumed?.query.index, failed[0]!.query.index, 'the query after the failures carries the index of the one before them');
  });
});
