import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { startControl, type TestControl } from './support/control-harness.js';
import { startFakeCluster, type FakeCluster } from './support/fake-nomad/index.js';
import { SseReader, type SseFrame } from './support/orch-helpers.js';
import { TEST_IMAGE } from './support/test-image.js';

/**
 * A deployment's progress stream with the Nomad driver, on the fake cluster (which plays
 * allocations on real containers): the job registered under Nomad's job version, each
 * allocation placed, its image downloaded by the client (the image's tag is "latest", so
 * the docker driver pulls it, from the registry the fake says serves it), its task running, its Consul check passing, and the old
 * allocation stopped by the rollout. The deployment records Nomad's job version.
 */
describe('deployment progress on nomad (fake cluster)', function () {
  this.timeout(240_000);
  /** The test image under a "latest" tag of this suite's own. */
  const IMAGE = 'localhost/deployment-progress-test:latest';
  let cluster: FakeCluster;
  let control: TestControl;
  let token: string;

  before(async () => {
    cluster = await startFakeCluster({ registryImages: [IMAGE] });
    control = await startControl({}, { nomad: cluster });
    execFileSync('podman', ['tag', TEST_IMAGE, IMAGE]);
    ({ token } = await control.signUp());
  });
  after(async () => {
    await control?.close();
    await cluster?.close();
    execFileSync('podman', ['rmi', IMAGE], { stdio: 'ignore' });
  });

  async function newestDeployment(agentId: string): Promise<any> {
    const response = await control.request('GET', `/agents/${agentId}/deployments`, { token });
    assert.equal(response.status, 200, JSON.stringify(response.body));
    return response.body.deployments[0];
  }

  async function readToEnd(agentId: string, deploymentId: string): Promise<SseFrame[]> {
    const reader = await SseReader.open(`${control.baseUrl}/agents/${agentId}/deployments/${deploymentId}/events`, { Authorization: `Bearer ${token}` });
    assert.equal(reader.status, 200, reader.body);
    try {
      await reader.ends(150_000);
    } finally {
      reader.close();
    }
    return reader.frames;
  }

  const progressOf = (frames: SseFrame[]) => frames.filter((f) => f.event === 'progress').map((f) => JSON.parse(f.data));
  const distinct = (phases: string[]) => phases.filter((phase, i) => phases.indexOf(phase) === i);

  it('streams registration, placement, image download, health check, routing and the drain of the old allocation, and records Nomad\'s job version', async () => {
    const created = await control.request('POST', '/agents', {
      token,
      body: { name: 'nomad-progress', api_key: 'sk-test', deploy: { image: IMAGE, port: 8080, replicas: 1, env: [{ key: 'MODE', value: 'serve' }] } },
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const agentId: string = created.body.id;
    const jobId = `agent-${agentId}`;

    const first = await newestDeployment(agentId);
    const firstEvents = progressOf(await readToEnd(agentId, first.id));
    assert.deepEqual(distinct(firstEvents.map((e) => e.phase)), ['queued', 'starting', 'pulling', 'health_check', 'routing', 'succeeded']);
    const [registered, placed] = firstEvents.filter((e) => e.phase === 'starting');
    assert.equal(registered.replica_id, undefined, 'the registration is a step of the whole job');
    assert.equal(registered.message, `registered as version 0 of Nomad job ${jobId}`);
    const [allocation] = cluster.allocations(jobId);
    assert.equal(placed.replica_id, allocation!.ID, 'then the allocation Nomad placed');
    assert.equal(firstEvents.find((e) => e.phase === 'pulling').message, `downloading image ${IMAGE}`);
    const recorded = await newestDeployment(agentId);
    assert.equal(recorded.status, 'succeeded');
    assert.equal(recorded.nomad_job_version, 0);
    assert.equal(cluster.job(jobId)!.Version, 0);

    const redeploy = await control.request('POST', `/agents/${agentId}/deploy`, { token, body: { env: [{ key: 'MODE', value: 'serve' }, { key: 'ROUND', value: '2' }] } });
    assert.equal(redeploy.status, 202, JSON.stringify(redeploy.body));
    const second = await newestDeployment(agentId);
    const secondEvents = progressOf(await readToEnd(agentId, second.id));
    assert.deepEqual(distinct(secondEvents.map((e) => e.phase)), ['queued', 'starting', 'pulling', 'health_check', 'routing', 'draining', 'succeeded']);
    assert.equal(secondEvents.find((e) => e.phase === 'starting').message, `registered as version 1 of Nomad job ${jobId}`);
    assert.deepEqual(secondEvents.filter((e) => e.phase === 'draining').map((e) => e.replica_id), [allocation!.ID], 'the first allocation is drained');
    const redeployed = await newestDeployment(agentId);
    assert.equal(redeployed.status, 'succeeded');
    assert.equal(redeployed.nomad_job_version, 1);
    assert.equal(cluster.job(jobId)!.Version, 1);
  });
});
