import assert from 'node:assert/strict';
import { startControl, type TestControl } from './support/control-harness.js';
import { createRunningAgent, SseReader, waitFor, type SseFrame } from './support/orch-helpers.js';
import { containersOf } from './support/podman.js';

/**
 * A deployment's progress stream on podman, read as a client reads it: the steps in order,
 * then `end`, then the server closes the stream. A rollout whose replicas never get healthy
 * ends `failed` while the replica that served keeps serving every request.
 */
describe('deployment progress on podman: GET /agents/{id}/deployments/{deployment_id}/events', function () {
  this.timeout(240_000);
  let control: TestControl;
  let token: string;

  before(async () => {
    control = await startControl({}, { orchestrate: true });
    ({ token } = await control.signUp());
  });
  after(async () => control?.close());

  const auth = () => ({ Authorization: `Bearer ${token}` });
  const eventsUrl = (agentId: string, deploymentId: string) => `${control.baseUrl}/agents/${agentId}/deployments/${deploymentId}/events`;

  async function newestDeployment(agentId: string): Promise<{ id: string; status: string; error: string | null }> {
    const response = await control.request('GET', `/agents/${agentId}/deployments`, { token });
    assert.equal(response.status, 200, JSON.stringify(response.body));
    return response.body.deployments[0];
  }

  /** Reads the whole stream: it must end by itself. */
  async function readToEnd(agentId: string, deploymentId: string, headers: Record<string, string> = {}): Promise<SseFrame[]> {
    const reader = await SseReader.open(eventsUrl(agentId, deploymentId), { ...auth(), ...headers });
    assert.equal(reader.status, 200, reader.body);
    assert.match(reader.contentType, /^text\/event-stream/);
    try {
      await reader.ends(120_000);
    } finally {
      reader.close();
    }
    return reader.frames;
  }

  const phasesOf = (frames: SseFrame[]) => frames.filter((f) => f.event === 'progress').map((f) => JSON.parse(f.data).phase as string);
  /** Each phase once, in the order first seen (a rollout of N replicas repeats the per-replica phases). */
  const distinct = (phases: string[]) => phases.filter((phase, i) => phases.indexOf(phase) === i);

  it('shows a deploy queued, pulling, starting, health_check, routing, succeeded, then ends; a redeploy also drains the old replica', async () => {
    const { id, replica: first } = await createRunningAgent(control, token);
    const created = await newestDeployment(id);
    const frames = await readToEnd(id, created.id);
    assert.deepEqual(phasesOf(frames), ['queued', 'pulling', 'starting', 'health_check', 'routing', 'succeeded']);
    assert.deepEqual(frames.at(-1), { event: 'end', id: undefined, data: JSON.stringify({ status: 'succeeded' }) }, 'the last event says how it ended');
    const ids = frames.filter((f) => f.event === 'progress').map((f) => Number(f.id));
    assert.ok(ids.every((value, i) => i === 0 || value > ids[i - 1]!), `ids increase: ${ids.join(',')}`);
    const routing = frames.map((f) => (f.event === 'progress' ? JSON.parse(f.data) : null)).find((data) => data?.phase === 'routing');
    assert.equal(routing.replica_id, first.id);
    assert.equal(typeof routing.message, 'string');
    assert.ok(!Number.isNaN(Date.parse(routing.at)));
    assert.equal((await newestDeployment(id)).status, 'succeeded');

    const redeploy = await control.request('POST', `/agents/${id}/deploy`, { token, body: { env: [{ key: 'MODE', value: 'serve' }, { key: 'ROUND', value: '2' }] } });
    assert.equal(redeploy.status, 202, JSON.stringify(redeploy.body));
    const second = await newestDeployment(id);
    assert.notEqual(second.id, created.id);
    const redeployed = await readToEnd(id, second.id);
    assert.deepEqual(distinct(phasesOf(redeployed)), ['queued', 'pulling', 'starting', 'health_check', 'routing', 'draining', 'succeeded']);
    const drained = redeployed.map((f) => (f.event === 'progress' ? JSON.parse(f.data) : null)).filter((data) => data?.phase === 'draining');
    assert.deepEqual(drained.map((data) => data.replica_id), [first.id], 'the replica of the first version is the one drained');
    assert.equal(redeployed.at(-1)!.event, 'end');
    assert.equal((await newestDeployment(id)).status, 'succeeded');

    // Resuming after the routing step gives exactly what followed it.
    const routedAt = redeployed.find((f) => f.event === 'progress' && JSON.parse(f.data).phase === 'routing')!;
    const resumed = await readToEnd(id, second.id, { 'Last-Event-ID': routedAt.id! });
    assert.deepEqual(resumed.map((f) => f.id ?? f.event), redeployed.slice(redeployed.indexOf(routedAt) + 1).map((f) => f.id ?? f.event));
    assert.deepEqual(phasesOf(resumed), ['draining', 'succeeded']);
  });

  it('a rollout whose replicas never get healthy ends failed, while the previous replica serves every request', async () => {
    const { id, replica: serving } = await createRunningAgent(control, token);
    await waitFor('the first deployment to succeed', async () => ((await newestDeployment(id)).status === 'succeeded' ? true : undefined), 60_000);

    // The test image with MODE=exit exits at once: restarted with backoff, then crashed past RESTART_BUDGET.
    const deploy = await control.request('POST', `/agents/${id}/deploy`, { token, body: { env: [{ key: 'MODE', value: 'exit' }] } });
    assert.equal(deploy.status, 202, JSON.stringify(deploy.body));
    const failing = await newestDeployment(id);
    const reader = await SseReader.open(eventsUrl(id, failing.id), auth());
    assert.equal(reader.status, 200, reader.body);

    // Requests to the serving replica for as long as the attempt lasts.
    const outcomes: (number | string)[] = [];
    while (!reader.ended) {
      outcomes.push(await fetch(`http://${serving.address}/health`, { signal: AbortSignal.timeout(5_000) }).then((r) => r.status, (e: Error) => e.message));
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    await reader.ends();
    assert.ok(outcomes.length > 0);
    assert.deepEqual(outcomes.filter((outcome) => outcome !== 200), [], `every request during the attempt answered 200 (${outcomes.length} sent)`);

    const phases = phasesOf(reader.frames);
    assert.deepEqual(distinct(phases).slice(0, 4), ['queued', 'pulling', 'starting', 'health_check']);
    assert.equal(phases.at(-1), 'failed');
    assert.ok(!phases.includes('routing') && !phases.includes('draining'), `nothing routed or drained: ${phases.join(', ')}`);
    const failed = JSON.parse(reader.frames.filter((f) => f.event === 'progress').at(-1)!.data);
    assert.match(failed.message, /exited with code 3/);
    assert.deepEqual(reader.frames.at(-1), { event: 'end', id: undefined, data: JSON.stringify({ status: 'failed' }) });

    const recorded = await newestDeployment(id);
    assert.equal(recorded.status, 'failed');
    assert.match(recorded.error ?? '', /exited with code 3/);
    const status = await control.driver!.status(id);
    assert.ok(status?.replicas.some((r) => r.id === serving.id && r.state === 'running'), 'the previous replica still serves');
    assert.equal((await fetch(`http://${serving.address}/health`)).status, 200);
  });

  it('is documented in the OpenAPI document as text/event-stream, with the data of both events', async () => {
    const document = (await control.request('GET', '/openapi.json')).body;
    const operation = document.paths['/agents/{id}/deployments/{deploymentId}/events']?.get;
    assert.ok(operation, 'the stream is in the document');
    assert.deepEqual(Object.keys(operation.responses['200'].content), ['text/event-stream']);
    assert.match(operation.responses['200'].content['text/event-stream'].schema.description, /`event: end`/);
    assert.equal(operation.responses['404'].content['application/json'].schema.$ref, '#/components/schemas/Error');
    assert.deepEqual(Object.keys(document.components.schemas.DeploymentProgress.properties), ['phase', 'replica_id', 'message', 'at']);
    assert.deepEqual(document.components.schemas.DeploymentStreamEnd.required, ['status']);
  });

  it('answers 404 DEPLOYMENT_NOT_FOUND for a deployment the agent does not have', async () => {
    const created = await control.request('POST', '/agents', { token, body: { name: 'no-deploys', api_key: 'sk-test' } });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const missing = await control.request('GET', `/agents/${created.body.id}/deployments/dep_missing/events`, { token });
    assert.equal(missing.status, 404);
    assert.equal(missing.body.code, 'DEPLOYMENT_NOT_FOUND');
  });
});

describe('deployment progress across a restart of the control API (podman)', function () {
  this.timeout(240_000);
  let first: TestControl | undefined;
  let second: TestControl | undefined;
  let crashed = false;

  after(async () => {
    await second?.close();
    if (!crashed) await first?.close();
  });

  it('ends a rollout that was in progress when the control API stopped, at the next start', async () => {
    first = await startControl({}, { orchestrate: true });
    const { token } = await first.signUp();
    const { id } = await createRunningAgent(first, token);
    // MODE=silent runs without listening: its replica is routed only once the start grace
    // (START_GRACE_SECONDS=4 in tests) is over, so the rollout is still going when we stop.
    const deploy = await first.request('POST', `/agents/${id}/deploy`, { token, body: { env: [{ key: 'MODE', value: 'silent' }] } });
    assert.equal(deploy.status, 202, JSON.stringify(deploy.body));
    await waitFor('the new replica\'s container', async () => (containersOf(id).length === 2 ? true : undefined));
    const rollout = (await first.request('GET', `/agents/${id}/deployments`, { token })).body.deployments[0];
    assert.equal(rollout.status, 'in_progress');
    await first.crash();
    crashed = true;

    second = await startControl({}, { orchestrate: true, resume: { database: first.database } });
    const reader = await SseReader.open(`${second.baseUrl}/agents/${id}/deployments/${rollout.id}/events`, { Authorization: `Bearer ${token}` });
    assert.equal(reader.status, 200, reader.body);
    await reader.ends(120_000);
    const phases = reader.frames.filter((f) => f.event === 'progress').map((f) => JSON.parse(f.data).phase);
    assert.deepEqual(phases.slice(-3), ['routing', 'draining', 'succeeded'], phases.join(', '));
    assert.deepEqual(reader.frames.at(-1), { event: 'end', id: undefined, data: JSON.stringify({ status: 'succeeded' }) });
    const recorded = await second.request('GET', `/agents/${id}/deployments/${rollout.id}`, { token });
    assert.equal(recorded.body.status, 'succeeded');
    assert.notEqual(recorded.body.finished_at, null);
  });
});
