import assert from 'node:assert/strict';
import { edgeKeyNames } from '../contract/edge-keys.js';
import { startControl, type TestControl } from './support/control-harness.js';
import { createAgent, expectStatus } from './support/control-api.js';
import { startFakeCluster, type FakeCluster } from './support/fake-nomad/index.js';
import { fakeClusterDriver, sampleSpec } from './support/nomad-samples.js';
import { waitFor } from './support/wait.js';

type Json = Record<string, any>;

/**
 * Canary deploys on Nomad (issue 36), through the control API, on the rules the fake ports
 * from Nomad (test/support/fake-nomad/cluster.ts): `update { canary }` places canaries
 * beside the old allocations and stops none until promotion (reconcile_cluster.go,
 * `requiresCanaries`, `computeUnderProvisionedBy`); promotion needs the canaries healthy
 * for the deployment (state_store.go, `UpdateDeploymentPromotion`); failing a deployment
 * stops its unpromoted canaries and auto_revert registers the latest stable version
 * (deployment_watcher.go, `FailDeployment`; `cancelUnneededCanaries`). Each test would
 * fail on Nomad's terms: a registration over unpromoted canaries restarts them, and an
 * abort that re-registered without failing the deployment would leave Nomad's deployment
 * running.
 */
describe('canary deploys on nomad: Nomad\'s own canaries, promoted or failed through its deployment API', function () {
  this.timeout(120_000);
  let cluster: FakeCluster;
  let control: TestControl;
  let token: string;

  before(async () => {
    cluster = await startFakeCluster({ simulate: true });
    control = await startControl({}, { nomad: cluster });
  });
  // The free plan's 3 replicas: 2 stable and 1 canary per test.
  beforeEach(async () => {
    ({ token } = await control.signUp());
  });
  after(async () => {
    await control?.close();
    await cluster?.close();
  });

  const nomad = async (path: string, init: RequestInit = {}) => {
    const response = await fetch(`${cluster.nomadAddr}${path}`, { ...init, headers: { 'X-Nomad-Token': cluster.nomadToken } });
    const text = await response.text();
    return { status: response.status, body: text.startsWith('{') || text.startsWith('[') ? JSON.parse(text) : text };
  };
  const consulChecks = async (): Promise<Json[]> => {
    const response = await fetch(`${cluster.consulAddr}/v1/health/state/any`, { headers: { 'X-Consul-Token': cluster.consulToken } });
    return (await response.json()) as Json[];
  };
  const latestDeployment = async (agentId: string) => (await control.request('GET', `/agents/${agentId}/deployments`, { token })).body.deployments[0];
  const live = (jobId: string) => cluster.allocations(jobId).filter((a) => a.DesiredStatus === 'run' && a.ClientStatus === 'running');

  /** An agent at 2 replicas whose first deployment succeeded, in the platform and in Nomad (its job version stable: auto_revert's target). */
  async function servingAgent() {
    const created = await createAgent(control, token, { name: `canary-${Math.random().toString(36).slice(2, 8)}`, deploy: { replicas: 2 } });
    const agent = { id: created.id as string, slug: new URL(created.url).hostname.split('.')[0]!, jobId: `agent-${created.id}` };
    await waitFor('the first deployment to succeed', async () => ((await latestDeployment(agent.id))?.status === 'succeeded' ? true : undefined), 60_000);
    await waitFor('Nomad to mark version 0 stable', async () => ((await nomad(`/v1/job/${agent.jobId}`)).body.Stable === true ? true : undefined));
    return agent;
  }

  /** A canary of 1 replica with 20% of requests; resolves once the platform says it serves. */
  async function startCanary(agent: { id: string }) {
    const deployed = await control.request('POST', `/agents/${agent.id}/deploy`, { token, body: { env: [{ key: 'VERSION', value: 'two' }], strategy: { type: 'canary', percent: 20 } } });
    expectStatus(deployed, 202);
    return waitFor('the canary to serve', async () => {
      const latest = await latestDeployment(agent.id);
      return latest.phase === 'canary' ? latest : undefined;
    }, 60_000);
  }

  it('runs the canary as Nomad canaries: the job at the new version with the stable count, one canary beside the two old allocations, tagged canary in Consul, split by the edge', async () => {
    const agent = await servingAgent();
    const stableAllocations = live(agent.jobId).map((a) => a.ID).sort();
    assert.equal(stableAllocations.length, 2);
    const canary = await startCanary(agent);

    const job = cluster.job(agent.jobId)!;
    assert.equal(job.Meta.agent_version, String(canary.agent_version));
    assert.equal(job.TaskGroups[0].Count, 2, "the count stays the stable version's");
    assert.equal(job.TaskGroups[0].Update.Canary, 1);
    assert.equal(job.TaskGroups[0].Update.AutoPromote, false, 'the platform promotes, not Nomad');
    const deployment = (await nomad(`/v1/job/${agent.jobId}/deployment`)).body;
    assert.equal(deployment.Status, 'running');
    assert.equal(deployment.StatusDescription, 'Deployment is running but requires manual promotion');
    assert.equal(deployment.TaskGroups.agent.DesiredCanaries, 1);

    const running = live(agent.jobId);
    assert.deepEqual(running.filter((a) => a.JobVersion === 0).map((a) => a.ID).sort(), stableAllocations, 'no stable allocation was stopped or replaced');
    const canaries = running.filter((a) => a.DeploymentStatus?.Canary === true);
    assert.equal(canaries.length, 1);
    assert.equal(canaries[0]!.JobVersion, job.Version);

    // Registered with CanaryTags: still carrying the tag the driver's health watch filters on.
    const tagsOf = async (allocationId: string) => (await consulChecks()).find((check) => check.ServiceID.includes(allocationId))?.ServiceTags as string[];
    const canaryTags = await tagsOf(canaries[0]!.ID);
    assert.ok(canaryTags.includes('platform-agent') && canaryTags.includes('canary') && canaryTags.includes(`version=${canary.agent_version}`), canaryTags.join(','));
    assert.ok(!(await tagsOf(stableAllocations[0]!)).includes('canary'));

    const status = (await control.driver!.status(agent.id))!;
    assert.equal(status.stableVersion, canary.agent_version - 1);
    assert.deepEqual(status.replicas.map((r) => r.version).sort(), [canary.agent_version - 1, canary.agent_version - 1, canary.agent_version]);
    await waitFor('both upstream sets at the edge', async () =>
      (await control.redis.scard(edgeKeyNames.canaryUpstreams(agent.slug))) === 1 && (await control.redis.scard(edgeKeyNames.upstreams(agent.slug))) === 2 ? true : undefined);
  });

  it('promote promotes Nomad\'s deployment first: the canary allocation keeps running (no restart) and the old ones are replaced', async () => {
    const agent = await servingAgent();
    const stableAllocations = live(agent.jobId).map((a) => a.ID);
    const canary = await startCanary(agent);
    const canaryAllocation = live(agent.jobId).find((a) => a.DeploymentStatus?.Canary === true)!;
    // Nomad promotes only canaries healthy for its deployment (min_healthy_time after they pass).
    await waitFor('the canary healthy for the deployment', async () => (cluster.allocations(agent.jobId).find((a) => a.ID === canaryAllocation.ID)?.DeploymentStatus?.Healthy ? true : undefined));
    const canaryDeploymentId = (await nomad(`/v1/job/${agent.jobId}/deployment`)).body.ID;

    expectStatus(await control.request('POST', `/agents/${agent.id}/deployments/${canary.id}/promote`, { token }), 202);
    await waitFor('the promoted deployment to succeed', async () => ((await latestDeployment(agent.id)).status === 'succeeded' ? true : undefined), 60_000);
    await waitFor('the old allocations to stop', async () => (live(agent.jobId).length === 2 ? true : undefined), 60_000);

    const promote = cluster.requests.filter((r) => r.api === 'nomad' && r.path === `/v1/deployment/promote/${canaryDeploymentId}`);
    assert.deepEqual(promote.map((r) => r.status), [200]);
    const running = live(agent.jobId);
    assert.ok(running.some((a) => a.ID === canaryAllocation.ID), 'the canary allocation was kept');
    assert.ok(running.every((a) => !stableAllocations.includes(a.ID)), 'the stable allocations were replaced');
    assert.ok(running.every((a) => a.DeploymentStatus?.Canary !== true));
    const job = cluster.job(agent.jobId)!;
    assert.equal(job.Meta.agent_version, String(canary.agent_version));
    assert.equal(job.TaskGroups[0].Update.Canary, 0, 'the next deploy is a plain rollout again');
    const status = (await control.driver!.status(agent.id))!;
    assert.equal(status.stableVersion, undefined);
    assert.deepEqual(status.replicas.filter((r) => r.state === 'running').map((r) => r.version), [canary.agent_version, canary.agent_version]);
  });

  it('abort fails Nomad\'s deployment: the canary stops, the job reverts to the stable version, and the stable allocations never restart', async () => {
    const agent = await servingAgent();
    const stableAllocations = live(agent.jobId).map((a) => a.ID).sort();
    const canary = await startCanary(agent);
    const canaryDeploymentId = (await nomad(`/v1/job/${agent.jobId}/deployment`)).body.ID;

    const aborted = await control.request('POST', `/agents/${agent.id}/deployments/${canary.id}/abort`, { token });
    expectStatus(aborted, 202);
    assert.equal(aborted.body.status, 'cancelled');
    await waitFor('the canary allocation to stop', async () => (live(agent.jobId).length === 2 && live(agent.jobId).every((a) => !a.DeploymentStatus?.Canary) ? true : undefined), 60_000);

    const fail = cluster.requests.filter((r) => r.api === 'nomad' && r.path === `/v1/deployment/fail/${canaryDeploymentId}`);
    assert.deepEqual(fail.map((r) => r.status), [200]);
    const versions = (await nomad(`/v1/job/${agent.jobId}/versions`)).body.Versions as Json[];
    assert.equal(versions[0]!.Meta.agent_version, String(canary.agent_version - 1), "auto_revert's registration: the stable version's job again");
    assert.equal(versions.length, 3, 'the stable version, the canary, the revert; the stable spec registered after it changed nothing');
    assert.deepEqual(live(agent.jobId).map((a) => a.ID).sort(), stableAllocations, 'the stable allocations, moved to the reverted version in place');
    const status = (await control.driver!.status(agent.id))!;
    assert.equal(status.version, canary.agent_version - 1);
    assert.equal(status.stableVersion, undefined);
    assert.equal(await control.redis.exists(edgeKeyNames.canaryUpstreams(agent.slug)), 0);
  });

  it('a canary whose image cannot be pulled is aborted as failed, and the stable allocations keep serving', async () => {
    const agent = await servingAgent();
    const stableAllocations = live(agent.jobId).map((a) => a.ID).sort();
    // The docker driver always pulls a `latest` image, and no registry serves this one.
    const deployed = await control.request('POST', `/agents/${agent.id}/deploy`, { token, body: { image: 'registry.invalid/agent:latest', port: 8080, strategy: { type: 'canary', percent: 20 } } });
    expectStatus(deployed, 202);
    const ended = await waitFor('the canary to end', async () => {
      const latest = await latestDeployment(agent.id);
      return latest.status === 'failed' ? latest : undefined;
    }, 60_000);
    assert.match(ended.error, /pull/i);
    await waitFor('the stable version back in the job', async () => (cluster.job(agent.jobId)!.Meta.agent_version === String(ended.agent_version - 1) ? true : undefined), 60_000);
    assert.deepEqual(live(agent.jobId).map((a) => a.ID).sort(), stableAllocations);
    const shown = (await control.request('GET', `/agents/${agent.id}`, { token })).body;
    assert.equal(shown.status, 'running');
  });

  it('the fake answers promote and fail as Nomad does: a terminal deployment, a body naming another deployment, an unknown one', async () => {
    const agent = await servingAgent();
    const done = (await nomad(`/v1/job/${agent.jobId}/deployment`)).body;
    assert.equal(done.Status, 'successful');
    const post = (path: string, body?: Json) => nomad(path, { method: 'POST', ...(body ? { body: JSON.stringify(body) } : {}) });
    assert.deepEqual(await post(`/v1/deployment/promote/${done.ID}`, { DeploymentID: done.ID, All: true }), { status: 500, body: "can't promote terminal deployment" });
    assert.deepEqual(await post(`/v1/deployment/fail/${done.ID}`), { status: 500, body: "can't fail terminal deployment" });
    assert.deepEqual(await post(`/v1/deployment/promote/${done.ID}`, { DeploymentID: 'another', All: true }), { status: 400, body: 'Deployment ID does not match' });
    assert.deepEqual(await post(`/v1/deployment/promote/${done.ID}`, { All: true }), { status: 400, body: 'DeploymentID must be specified' });
    assert.deepEqual(await post('/v1/deployment/fail/00000000-0000-0000-0000-000000000000'), { status: 500, body: 'deployment not found' });
    assert.equal((await nomad(`/v1/deployment/fail/${done.ID}`)).status, 405);
  });

  it('after a restart of the control API, adopts a running canary as it is, and carries out a promotion decided before the restart', async () => {
    const scaling = { enabled: false, min: 1, max: 3 };
    const stable = sampleSpec({ agentId: 'agt_CanaryRestart000000001', slug: 'canary-restart-x7k2', version: 1, count: 2, scaling });
    const canarySpec = { ...stable, version: 2, count: 1, env: { ...stable.env, VERSION: 'two' }, stable };
    const jobId = `agent-${stable.agentId}`;
    // A cluster of its own: a reconcile removes every job it is not given.
    const own = await startFakeCluster({ simulate: true });
    const ownLive = () => own.allocations(jobId).filter((a) => a.DesiredStatus === 'run' && a.ClientStatus === 'running');
    const first = fakeClusterDriver(own, { NOMAD_WATCH_MIN_INTERVAL_MS: '250' });
    await first.submit(stable);
    await waitFor('the stable version stable in Nomad', async () => (own.job(jobId)?.Stable === true ? true : undefined), 60_000);
    await first.submit(canarySpec);
    const canaryAllocation = await waitFor('the canary healthy for its deployment', async () => ownLive().find((a) => a.DeploymentStatus?.Canary && a.DeploymentStatus.Healthy));
    await first.close();

    const second = fakeClusterDriver(own, { NOMAD_WATCH_MIN_INTERVAL_MS: '250' });
    try {
      const from = own.requests.length;
      await second.reconcile([canarySpec]);
      assert.deepEqual(own.requests.slice(from).filter((r) => r.method !== 'GET').map((r) => r.path), [], 'adopted: nothing registered, promoted or failed');
      const adopted = (await second.status(stable.agentId))!;
      assert.equal(adopted.stableVersion, 1);
      assert.deepEqual(adopted.replicas.map((r) => r.version).sort(), [1, 1, 2]);

      // The platform promoted while no driver ran: the canary's version at the full count, without `stable`.
      await second.reconcile([{ ...canarySpec, count: 2, stable: undefined }]);
      const promotions = own.requests.slice(from).filter((r) => r.path.startsWith('/v1/deployment/promote/'));
      assert.deepEqual(promotions.map((r) => r.status), [200]);
      await waitFor('the rollout to end at 2 allocations of version 2', async () => {
        const running = ownLive();
        return running.length === 2 && running.every((a) => own.job(jobId)!.Version === a.JobVersion) ? true : undefined;
      }, 60_000);
      assert.ok(ownLive().some((a) => a.ID === canaryAllocation.ID), 'the canary kept running through the promotion');
    } finally {
      await second.close();
      await own.close();
    }
  });
});
