import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { startFakeCluster, type FakeCluster } from './support/fake-nomad/index.js';
import { waitFor } from './support/wait.js';

type Json = Record<string, any>;

/**
 * What `POST /v1/job/:id/scale` does in Nomad, played by the fake (cluster.ts cites the
 * source of each rule): the scaled job is registered as a new version (nomad/job_endpoint.go
 * `Job.Scale` → state_store.go `upsertJobImpl`), the running allocations move to it in place
 * (scheduler/util.go `genericAllocUpdateFn`), and a deployment of that version runs until
 * they are healthy again (reconcile_cluster.go `createDeployment`; the client's health hook
 * starts over for an allocation whose deployment changed), refusing another scale meanwhile.
 */
describe('the fake Nomad scales a job as Nomad does', function () {
  this.timeout(60_000);
  let cluster: FakeCluster;
  const jobId = 'agent-scaled-in-place';

  before(async () => {
    // MinHealthyTime is waited up to 3 s (not the fake's usual 500 ms), so a deployment is seen running.
    cluster = await startFakeCluster({ simulate: true, minHealthyTimeCapMs: 3_000 });
  });
  after(async () => cluster?.close());

  const nomad = async (method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> => {
    const response = await fetch(cluster.nomadAddr + path, {
      method, headers: { 'X-Nomad-Token': cluster.nomadToken, 'content-type': 'application/json' }, body: body ? JSON.stringify(body) : undefined,
    });
    const text = await response.text();
    return { status: response.status, body: (response.headers.get('content-type') ?? '').includes('json') ? JSON.parse(text) : text };
  };
  const job = async () => (await nomad('GET', `/v1/job/${jobId}`)).body as Json;
  const deployment = async () => (await nomad('GET', `/v1/job/${jobId}/deployment`)).body as Json;
  const scale = (count: number) => nomad('POST', `/v1/job/${jobId}/scale`, { Count: count, Target: { Job: jobId, Group: 'agent' }, Message: `to ${count}` });
  const running = () => cluster.allocations(jobId).filter((a) => a.DesiredStatus === 'run');
  const settled = (version: number) => waitFor(`the deployment of version ${version} successful`, async () => {
    const latest = await deployment();
    return latest?.JobVersion === version && latest.Status === 'successful' ? latest : undefined;
  }, 30_000);

  function exampleJob(count: number): Json {
    const request = JSON.parse(readFileSync('nomad-jobs/agent.example.json', 'utf8'));
    request.Job.ID = request.Job.Name = jobId;
    request.Job.TaskGroups[0].Count = count;
    request.Job.TaskGroups[0].Scaling.Min = 0; // what the driver sends when an agent is scaled to 0
    return request;
  }

  it('makes a new job version, moves the running allocations to it in place, and runs a deployment that blocks another scale', async () => {
    const request = exampleJob(2);
    assert.equal((await nomad('PUT', '/v1/jobs', request)).status, 200);
    const first = await settled(0);
    const before = await job();
    const kept = running().map((a) => a.ID as string).sort();
    assert.equal(kept.length, 2);

    const scaled = await scale(3);
    assert.equal(scaled.status, 200, scaled.body);
    const after = await job();
    assert.equal(after.Version, before.Version + 1, 'a scale registers a new version (Job.Scale → upsertJobImpl)');
    assert.ok(after.JobModifyIndex > before.JobModifyIndex);
    assert.equal(scaled.body.JobModifyIndex, after.JobModifyIndex);
    assert.equal(after.TaskGroups[0].Count, 3);
    const versions = (await nomad('GET', `/v1/job/${jobId}/versions`)).body;
    assert.deepEqual(versions.Versions.map((v: Json) => [v.Version, v.TaskGroups[0].Count]), [[1, 3], [0, 2]]);

    const latest = await deployment();
    assert.notEqual(latest.ID, first.ID, 'a deployment of the scaled version');
    assert.deepEqual([latest.JobVersion, latest.Status], [1, 'running']);
    await waitFor('three allocations', async () => (running().length === 3 ? true : undefined));
    const now = running();
    assert.deepEqual(now.filter((a) => kept.includes(a.ID)).map((a) => a.JobVersion), [1, 1], 'updated in place, not replaced');
    assert.ok(now.every((a) => a.JobVersion === 1 && a.DeploymentID === latest.ID));

    const refused = await scale(1);
    assert.deepEqual([refused.status, refused.body], [400, 'job scaling blocked due to active deployment']);
    assert.equal((await job()).Version, 1, 'the refused scale changed nothing');

    await settled(1);
    assert.ok(running().every((a) => a.DeploymentStatus?.Healthy === true), 'healthy again for the new deployment');
  });

  it('scales down in place: the surplus allocations stop at their version, the rest move to the new one', async () => {
    const kept = running().map((a) => a.ID as string);
    assert.equal((await scale(1)).status, 200);
    const [remaining] = running();
    assert.ok(kept.includes(remaining!.ID));
    assert.equal(remaining!.JobVersion, 2);
    const stopped = cluster.allocations(jobId).filter((a) => kept.includes(a.ID) && a.DesiredStatus === 'stop');
    assert.deepEqual(stopped.map((a) => a.JobVersion), [1, 1]);
    assert.equal((await deployment()).JobVersion, 2, 'a desired total of 1 still makes a deployment');
    await settled(2);
  });

  it('scales to 0 without a deployment (desired total 0), so the next scale is not blocked', async () => {
    const before = await deployment();
    const parked = await scale(0);
    assert.equal(parked.status, 200, parked.body);
    assert.equal((await job()).Version, 3);
    assert.equal(running().length, 0);
    assert.deepEqual([(await deployment()).ID, (await deployment()).JobVersion], [before.ID, 2], 'no deployment of version 3');
    const woken = await scale(1);
    assert.equal(woken.status, 200, woken.body);
    assert.deepEqual([(await deployment()).JobVersion, (await deployment()).Status], [4, 'running']);
    await settled(4);
  });

  it('updates in place on a registration that changes only the count, and replaces on one that changes the task Meta', async () => {
    const request = exampleJob(2);
    request.PreserveCounts = false; // the driver's fallback when Nomad refuses a scale
    const kept = running().map((a) => a.ID as string);
    assert.equal((await nomad('PUT', '/v1/jobs', request)).status, 200);
    assert.equal((await job()).Version, 5);
    await waitFor('two allocations', async () => (running().length === 2 ? true : undefined));
    assert.ok(running().some((a) => kept.includes(a.ID) && a.JobVersion === 5), 'the running one kept, at version 5');
    const previous = await settled(5);

    // The driver writes the agent version into the job's, the group's and the task's Meta; the task's wins (CombinedTaskMeta).
    for (const holder of [request.Job, request.Job.TaskGroups[0], request.Job.TaskGroups[0].Tasks[0]]) holder.Meta.agent_version = '4';
    assert.equal((await nomad('PUT', '/v1/jobs', request)).status, 200);
    const replaced = await waitFor('the old allocations stopped', async () => {
      const live = running();
      return live.length === 2 && live.every((a) => a.JobVersion === 6) ? live : undefined;
    }, 30_000);
    assert.ok(replaced.every((a) => !kept.includes(a.ID)), 'a Meta change is destructive (tasksUpdated: task meta)');
    assert.notEqual((await deployment()).ID, previous.ID);
    await settled(6);
  });
});
