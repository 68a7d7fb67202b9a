import assert from 'node:assert/strict';
import { startControl, type TestControl } from './support/control-harness.js';
import { startFakeCluster, type FakeCluster } from './support/fake-nomad/index.js';
import { waitFor } from './support/wait.js';

type Json = Record<string, any>;

/**
 * Scaling an agent on Nomad, through the control API, on terms the fake ports from Nomad:
 * every scale is a new Nomad job version whose allocations are updated in place, with a
 * deployment that refuses the next scale until they are healthy again (test/support/
 * fake-nomad/cluster.ts, `commit`, `evaluate`). The user's view must not move: the agent's
 * version, its one deployment and the Nomad version that deployment registered stay; only
 * the count changes, and it ends where the user put it even when Nomad refused the scale.
 */
describe('scaling on nomad: new Nomad versions in place, the platform version unchanged', function () {
  this.timeout(120_000);
  let cluster: FakeCluster;
  let control: TestControl;
  let token: string;

  before(async () => {
    // The driver's MinHealthyTime (10 s) is waited up to 3 s: each deployment outlives the next request.
    cluster = await startFakeCluster({ simulate: true, minHealthyTimeCapMs: 3_000 });
    control = await startControl({}, { nomad: cluster });
    ({ token } = await control.signUp());
  });
  after(async () => {
    await control?.close();
    await cluster?.close();
  });

  const get = async (path: string) => (await control.request('GET', path, { token })).body;
  const scale = async (agentId: string, direction: 'up' | 'down') => {
    const response = await control.request('POST', `/agents/${agentId}/scale`, { token, body: { direction, count: 1 } });
    assert.equal(response.status, 200, JSON.stringify(response.body));
  };
  const nomadVersions = async (jobId: string): Promise<Json[]> => {
    const response = await fetch(`${cluster.nomadAddr}/v1/job/${jobId}/versions`, { headers: { 'X-Nomad-Token': cluster.nomadToken } });
    return ((await response.json()) as { Versions: Json[] }).Versions.reverse();
  };
  const latestNomadDeployment = async (jobId: string): Promise<Json> => {
    const response = await fetch(`${cluster.nomadAddr}/v1/job/${jobId}/deployment`, { headers: { 'X-Nomad-Token': cluster.nomadToken } });
    return (await response.json()) as Json;
  };
  const settled = (agentId: string, replicas: number) => waitFor(`${replicas} replica(s) running`, async () => {
    const agent = await get(`/agents/${agentId}`);
    return agent.status === 'running' && agent.replicas === replicas ? agent : undefined;
  }, 60_000);

  let agentId: string;
  let jobId: string;
  let firstAllocation: string;

  it('scales twice right after a deploy: Nomad refuses both (its deployment is active), the driver registers the count, and the rollout ends at 3 replicas of the deployed version', async () => {
    const created = await control.request('POST', '/agents', { token, body: { name: 'nomad-scaled', api_key: 'sk-test', deploy: { replicas: 1 } } });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    agentId = created.body.id;
    jobId = `agent-${agentId}`;
    firstAllocation = (await waitFor('the first allocation', async () => cluster.allocations(jobId)[0]))!.ID;

    await scale(agentId, 'up');
    await scale(agentId, 'up');
    await settled(agentId, 3);
    const scaled = (await control.driver!.status(agentId))!.events.filter((e) => e.type === 'scaled').map((e) => e.message);
    assert.deepEqual(scaled, ['2 replica(s) (job registered again: Nomad refused the scale endpoint)', '3 replica(s) (job registered again: Nomad refused the scale endpoint)']);
    const job = cluster.job(jobId)!;
    assert.equal(job.TaskGroups[0].Count, 3);
    const versions = await nomadVersions(jobId);
    assert.deepEqual(versions.map((v) => v.TaskGroups[0].Count), [1, 2, 3], 'each refused scale registered the job with its count');
    assert.deepEqual(new Set(versions.map((v) => v.Meta.agent_version)).size, 1, 'one platform version in every Nomad version');

    const deployments = (await get(`/agents/${agentId}/deployments`)).deployments as Json[];
    assert.equal(deployments.length, 1, 'a scale is not a deployment');
    const [deployment] = await waitFor('the deployment succeeded', async () => {
      const listed = (await get(`/agents/${agentId}/deployments`)).deployments as Json[];
      return listed[0]?.status === 'succeeded' ? listed : undefined;
    });
    assert.equal(deployment!.nomad_job_version, 0, 'the version the deploy registered');

    const status = (await control.driver!.status(agentId))!;
    assert.equal(status.version, deployment!.agent_version);
    assert.deepEqual(status.replicas.map((r) => [r.state, r.version]), Array(3).fill(['running', deployment!.agent_version]));
    assert.ok(status.replicas.some((r) => r.id === firstAllocation), 'the first replica was kept (updated in place)');
  });

  it('scales down twice once Nomad’s deployment is done: the first through the scale endpoint, the second registered, and ends at 1', async () => {
    await waitFor('Nomad’s deployment successful', async () => ((await latestNomadDeployment(jobId)).Status === 'successful' ? true : undefined), 30_000);
    const before = (await nomadVersions(jobId)).length;
    await scale(agentId, 'down');
    await scale(agentId, 'down');
    await settled(agentId, 1);
    assert.equal(cluster.job(jobId)!.TaskGroups[0].Count, 1);
    const versions = await nomadVersions(jobId);
    assert.deepEqual(versions.slice(before).map((v) => v.TaskGroups[0].Count), [2, 1]);
    const scaled = (await control.driver!.status(agentId))!.events.filter((e) => e.type === 'scaled').map((e) => e.message);
    assert.deepEqual(scaled.slice(-2), ['2 replica(s)', '1 replica(s) (job registered again: Nomad refused the scale endpoint)']);
    const deployments = (await get(`/agents/${agentId}/deployments`)).deployments as Json[];
    assert.deepEqual(deployments.map((d) => [d.status, d.nomad_job_version]), [['succeeded', 0]]);
  });

  it('rolls a redeploy after the scales out as a new version: its own Nomad version, the kept replica replaced', async () => {
    const kept = (await control.driver!.status(agentId))!.replicas.map((r) => r.id);
    const redeploy = await control.request('POST', `/agents/${agentId}/deploy`, { token, body: { env: [{ key: 'ROUND', value: '2' }] } });
    assert.equal(redeploy.status, 202, JSON.stringify(redeploy.body));
    const deployment = await waitFor('the redeploy succeeded', async () => {
      const [newest] = (await get(`/agents/${agentId}/deployments`)).deployments as Json[];
      return newest?.number === 2 && newest.status !== 'in_progress' ? newest : undefined;
    }, 60_000);
    assert.equal(deployment.status, 'succeeded', deployment.error);
    const versions = await nomadVersions(jobId);
    assert.equal(deployment.nomad_job_version, versions.at(-1)!.Version, 'the version the redeploy registered, after the scales’ versions');
    const status = (await control.driver!.status(agentId))!;
    assert.deepEqual(status.replicas.map((r) => [r.state, r.version]), [['running', deployment.agent_version]]);
    assert.ok(!kept.includes(status.replicas[0]!.id), 'a new agent version replaces the replica (its task Meta changed)');
  });
});
