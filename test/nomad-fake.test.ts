import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { startFakeCluster, type FakeCluster } from './support/fake-nomad/index.js';
import { waitFor } from './support/wait.js';

/** The fake is stricter than Nomad and plays its real shapes: checked here, so the driver's tests against it mean something. */
describe('the fake Nomad + Consul', function () {
  this.timeout(60_000);
  let cluster: FakeCluster;
  const example = () => JSON.parse(readFileSync('nomad-jobs/agent.example.json', 'utf8'));

  before(async () => {
    cluster = await startFakeCluster();
  });
  after(async () => cluster?.close());

  const nomad = (method: string, path: string, body?: unknown, token = cluster.nomadToken) =>
    fetch(cluster.nomadAddr + path, { method, headers: { 'X-Nomad-Token': token, 'content-type': 'application/json' }, body: body ? JSON.stringify(body) : undefined });

  it('refuses a request without the token, as Nomad\'s ACLs do', async () => {
    const response = await nomad('GET', '/v1/jobs', undefined, 'wrong');
    assert.equal(response.status, 403);
    assert.equal(await response.text(), 'Permission denied');
  });

  it('rejects an unknown field and a duration written as text, naming their paths', async () => {
    const request = example();
    request.Job.TaskGroups[0].Tasks[0].Resourcez = { CPU: 100 };
    request.Job.TaskGroups[0].Update.MinHealthyTime = '10s';
    request.Job.TaskGroups[0].Tasks[0].Config.pid_limit = 512;
    const response = await nomad('PUT', '/v1/jobs', request);
    assert.equal(response.status, 400);
    const text = await response.text();
    assert.match(text, /JobRegisterRequest\.Job\.TaskGroups\[0\]\.Tasks\[0\]\.Resourcez: unknown field/);
    assert.match(text, /JobRegisterRequest\.Job\.TaskGroups\[0\]\.Update\.MinHealthyTime: expected integer nanoseconds/);
    assert.match(text, /Job\.TaskGroups\[0\]\.Tasks\[0\]\.Config\.pid_limit: unknown field/);
    assert.equal(cluster.job(request.Job.ID), undefined, 'nothing registered');
  });

  it('accepts the job the driver generates (nomad-jobs/agent.example.json)', async () => {
    const request = example();
    request.Job.TaskGroups[0].Tasks[0].Config.image = 'registry.invalid/never:1';
    const response = await nomad('PUT', '/v1/jobs', request);
    assert.equal(response.status, 200, await response.clone().text());
    assert.ok(Number((await response.json() as { JobModifyIndex: number }).JobModifyIndex) > 0);
    assert.ok(Number(response.headers.get('x-nomad-index')) > 0);
  });

  it('keeps a job\'s version when it is registered again unchanged, and adds one when it changed (Job.Register, upsertJobImpl)', async () => {
    const request = example();
    request.Job.ID = request.Job.Name = 'agent-versions';
    request.Job.TaskGroups[0].Tasks[0].Config.image = 'registry.invalid/never:1';
    const register = async () => {
      const response = await nomad('PUT', '/v1/jobs', request);
      assert.equal(response.status, 200, await response.clone().text());
      return ((await (await nomad('GET', '/v1/job/agent-versions')).json()) as { Version: number }).Version;
    };
    assert.equal(await register(), 0);
    assert.equal(await register(), 0, 'the same spec: no new version');
    request.Job.Meta.agent_version = '99';
    assert.equal(await register(), 1);
    assert.equal(await register(), 1);
  });

  it("stores the constraints Nomad's mutators add: the Consul one once, the implicit-identity one again at each registration of the job as read", async () => {
    const request = example();
    request.Job.ID = request.Job.Name = 'agent-constraints';
    request.Job.TaskGroups[0].Count = 0; // nothing placed
    request.Job.TaskGroups[0].Scaling.Min = 0;
    const targets = async () => {
      const read = (await (await nomad('GET', '/v1/job/agent-constraints')).json()) as Record<string, any>;
      return { read, targets: (read.TaskGroups[0].Constraints as { LTarget: string }[]).map((c) => c.LTarget) };
    };
    const registered = await nomad('PUT', '/v1/jobs', request);
    assert.equal(registered.status, 200, await registered.text());
    const first = await targets();
    assert.deepEqual(first.targets, ['${attr.consul.version}', '${attr.nomad.version}']);
    assert.equal((await nomad('PUT', '/v1/jobs', request)).status, 200);
    assert.deepEqual((await targets()).targets, first.targets, 'the job as the driver builds it: the same spec, one of each');
    const again = await nomad('PUT', '/v1/jobs', { Job: first.read });
    assert.equal(again.status, 200, await again.text());
    assert.deepEqual((await targets()).targets, ['${attr.consul.version}', '${attr.nomad.version}', '${attr.nomad.version}'], 'the job as read: one more');
  });

  it('refuses an empty Variable, as Nomad does', async () => {
    const response = await nomad('PUT', '/v1/var/nomad/jobs/agent-x', { Namespace: 'default', Path: 'nomad/jobs/agent-x', Items: {} });
    assert.equal(response.status, 400);
  });

  it('fails an allocation whose image cannot be pulled with a Driver Failure event, past its restart attempts', async () => {
    const request = example();
    request.Job.ID = request.Job.Name = 'agent-unpullable';
    request.Job.TaskGroups[0].Count = 1;
    request.Job.TaskGroups[0].Tasks[0].Config.image = 'registry.invalid/no/such:1';
    request.Job.TaskGroups[0].RestartPolicy = { Attempts: 1, Interval: 60e9, Delay: 100e6, Mode: 'fail' };
    await nomad('PUT', '/v1/var/nomad/jobs/agent-unpullable', { Namespace: 'default', Path: 'nomad/jobs/agent-unpullable', Items: { K: 'v' } });
    request.Job.TaskGroups[0].Tasks[0].Templates[0].EmbeddedTmpl = request.Job.TaskGroups[0].Tasks[0].Templates[0].EmbeddedTmpl.replace(/agent-agt_[A-Za-z0-9]+/, 'agent-unpullable');
    assert.equal((await nomad('PUT', '/v1/jobs', request)).status, 200);
    const alloc = await waitFor('the allocation failed', async () => {
      const [first] = cluster.allocations('agent-unpullable');
      return first?.ClientStatus === 'failed' ? first : undefined;
    });
    const events = alloc.TaskStates.agent.Events.map((e: { Type: string }) => e.Type);
    assert.deepEqual(events.filter((t: string) => t === 'Driver Failure').length, 2, 'the first try and one restart');
    assert.equal(events.at(-1), 'Not Restarting');
    assert.match(alloc.TaskStates.agent.Events.find((e: { Type: string }) => e.Type === 'Driver Failure').DisplayMessage, /^Failed to pull `registry\.invalid\/no\/such:1`/);
    assert.equal(alloc.TaskStates.agent.Failed, true);
  });

  it('lists a job\'s allocations as Job.Allocations does: list entries, with no DeploymentID and no AllocatedResources', async () => {
    const request = example();
    request.Job.ID = request.Job.Name = 'agent-stubs';
    request.Job.TaskGroups[0].Count = 1;
    request.Job.TaskGroups[0].Tasks[0].Config.image = 'registry.invalid/no/such:1';
    await nomad('PUT', '/v1/var/nomad/jobs/agent-stubs', { Namespace: 'default', Path: 'nomad/jobs/agent-stubs', Items: { K: 'v' } });
    request.Job.TaskGroups[0].Tasks[0].Templates[0].EmbeddedTmpl = request.Job.TaskGroups[0].Tasks[0].Templates[0].EmbeddedTmpl.replace(/agent-agt_[A-Za-z0-9]+/, 'agent-stubs');
    assert.equal((await nomad('PUT', '/v1/jobs', request)).status, 200);
    const [placed] = await waitFor('an allocation', async () => (cluster.allocations('agent-stubs').length === 1 ? cluster.allocations('agent-stubs') : undefined));

    const response = await nomad('GET', '/v1/job/agent-stubs/allocations');
    assert.equal(response.status, 200);
    const [listed] = (await response.json()) as Record<string, unknown>[];
    assert.equal(listed!.ID, placed!.ID);
    assert.equal('DeploymentID' in listed!, false);
    assert.equal(listed!.AllocatedResources, null);
    assert.ok(listed!.TaskStates && typeof listed!.TaskStates === 'object', 'task states kept');
    assert.deepEqual(await (await nomad('GET', '/v1/job/agent-none/allocations')).json(), [], 'an unknown job has none');
    const post = await nomad('POST', '/v1/job/agent-stubs/allocations', {});
    assert.deepEqual([post.status, await post.text()], [405, 'Invalid method']);
  });

  it('answers a Consul blocking query at once when the index moved, and holds it otherwise', async () => {
    const url = `${cluster.consulAddr}/v1/health/service/agent-none?passing=true`;
    const headers = { 'X-Consul-Token': cluster.consulToken };
    const first = await fetch(url, { headers });
    assert.deepEqual(await first.json(), []);
    const index = first.headers.get('x-consul-index');
    // With the current index and a 1 s wait, the query is held and answered unchanged when the wait ends.
    const held = await fetch(`${url}&index=${index}&wait=1s`, { headers });
    assert.equal(held.headers.get('x-consul-index'), index);
    // With an older index it answers at once.
    const atOnce = await fetch(`${url}&index=0&wait=60s`, { headers, signal: AbortSignal.timeout(5_000) });
    assert.equal(atOnce.status, 200);
  });
});
