import assert from 'node:assert/strict';
import { edgeKeyNames } from '../contract/edge-keys.js';
import { createRequestFigureRecorder } from '../contract/request-figure-recorder.js';
import { runReplica, type InMemoryDriver } from './support/in-memory-driver.js';
import { startControl, type TestControl } from './support/control-harness.js';
import { createAgent, expectError, expectStatus } from './support/control-api.js';
import { waitFor } from './support/wait.js';

/**
 * Canary deploys through the API (issue 36), on real Postgres and Redis and the in-memory
 * driver: what a canary deploy may start from, what it records and projects for the edge,
 * the job it hands the driver (two versions), and how promote, abort and the judge end it.
 * test/canary-e2e.test.ts runs the same on podman through the local edge.
 */
describe('canary deploys through the API', function () {
  this.timeout(30_000);
  let control: TestControl;
  let token: string;
  let nextPort = 20_000;

  before(async () => {
    control = await startControl();
  });
  // An account each: the free plan's 3 replicas hold one test's agents, both versions counted.
  beforeEach(async () => {
    ({ token } = await control.signUp());
  });
  after(async () => control?.close());

  const driver = () => control.driver as InMemoryDriver;
  const deployment = async (agentId: string, id: string) => {
    const response = await control.request('GET', `/agents/${agentId}/deployments/${id}`, { token });
    expectStatus(response, 200);
    return response.body;
  };
  const latestDeployment = async (agentId: string) => {
    const response = await control.request('GET', `/agents/${agentId}/deployments`, { token });
    expectStatus(response, 200);
    return response.body.deployments[0];
  };
  /** An agent whose first deployment rolled out: one replica running, its deployment succeeded. */
  async function servingAgent(body: Record<string, unknown> = {}) {
    const created = await createAgent(control, token, { access: 'public', deploy: { replicas: 1 }, ...body });
    const agent = { ...created, slug: new URL(created.url).hostname.split('.')[0]! };
    await runReplica(control, agent, `10.9.0.1:${(nextPort += 2)}`);
    await waitFor('the first deployment to succeed', async () => ((await latestDeployment(agent.id)).status === 'succeeded' ? true : undefined));
    return agent;
  }
  const deployCanary = (agentId: string, strategy: Record<string, unknown>, deploy: Record<string, unknown> = { env: [{ key: 'VERSION', value: 'two' }] }) =>
    control.request('POST', `/agents/${agentId}/deploy`, { token, body: { ...deploy, strategy: { type: 'canary', ...strategy } } });

  it('refuses a canary with no version serving, while auto-scaled, and a second deploy while one runs', async () => {
    const idle = await createAgent(control, token, { deploy: { replicas: 0 } });
    expectError(await deployCanary(idle.id, { percent: 10 }), 409, 'CANARY_NOT_POSSIBLE');
    const scaled = await servingAgent({ deploy: { replicas: 1, auto_scale: true, min_replicas: 1, max_replicas: 3 } });
    expectError(await deployCanary(scaled.id, { percent: 10 }), 409, 'CANARY_NOT_POSSIBLE');

    const agent = await servingAgent();
    expectStatus(await deployCanary(agent.id, { percent: 10 }), 202);
    expectError(await deployCanary(agent.id, { percent: 20 }), 409, 'CANARY_NOT_POSSIBLE');
    expectError(await control.request('POST', `/agents/${agent.id}/deploy`, { token, body: { port: 9000 } }), 409, 'CANARY_NOT_POSSIBLE');
    expectError(await deployCanary(agent.id, { percent: 100 }), 422, 'VALIDATION_ERROR');
  });

  it('records the strategy with defaults, projects the split for the edge and hands the driver both versions', async () => {
    const agent = await servingAgent();
    const stable = await latestDeployment(agent.id);
    const deployed = await deployCanary(agent.id, { percent: 25, affinity: 'caller' });
    expectStatus(deployed, 202);
    // Until its replica runs it is a rollout in progress; then it shows as a canary, with its figures.
    const canary = await waitFor('the canary to serve', async () => {
      const latest = await latestDeployment(agent.id);
      return latest.phase === 'canary' ? latest : undefined;
    });
    assert.equal(canary.agent_version, deployed.body.version, 'one version, as any deploy');
    assert.deepEqual(canary.strategy, { type: 'canary', percent: 25, replicas: 1, affinity: 'caller', auto_promote_after_seconds: null, max_error_ratio: 0.05, min_requests: 50 });
    assert.equal(canary.phase, 'canary');
    assert.equal(canary.status, 'in_progress');
    assert.match(canary.canary.preview_url, new RegExp(`^https?://${agent.slug}--d${canary.number}\\.`));
    assert.deepEqual(canary.canary.figures.canary, { request_count: 0, error_count: 0, avg_latency_ms: 0, p95_latency_ms: 0 });

    const hash = await control.redis.hgetall(edgeKeyNames.agent(agent.slug));
    assert.deepEqual([hash.canary_deployment, hash.canary_percent, hash.canary_affinity], [String(canary.number), '25', 'caller']);
    const job = await waitFor('the canary job', async () => (driver().jobOf(agent.id)?.stable ? driver().jobOf(agent.id) : undefined));
    assert.equal(job.version, canary.agent_version);
    assert.equal(job.count, 1, "the canary's own replicas");
    assert.equal(job.env.VERSION, 'two');
    assert.equal(job.stable!.version, stable.agent_version);
    assert.equal(job.stable!.env.VERSION, undefined, 'the stable version runs its own configuration');
    // Both replicas routable: each set has its version's.
    await waitFor('both upstream sets', async () =>
      (await control.redis.scard(edgeKeyNames.canaryUpstreams(agent.slug))) === 1 && (await control.redis.scard(edgeKeyNames.upstreams(agent.slug))) === 1 ? true : undefined);
    // Its replica running, the deployment says the canary serves, once; it stays in progress.
    const events = await waitFor('the canary event', async () => {
      const rows = await control.db('deployment_events').where({ deployment_id: canary.id, phase: 'canary' });
      return rows.length > 0 ? rows : undefined;
    });
    assert.deepEqual(events.map((event: { message: string }) => event.message), ['canary serving 25% of requests on 1 replica']);
    assert.equal((await deployment(agent.id, canary.id)).status, 'in_progress');
  });

  it('promote: the new version becomes the agent at its replicas; the edge drops the split; promoting again is a 409', async () => {
    const agent = await servingAgent();
    expectStatus(await deployCanary(agent.id, { percent: 10 }, { replicas: 2, env: [{ key: 'VERSION', value: 'two' }] }), 202);
    const canary = await latestDeployment(agent.id);
    const promoted = await control.request('POST', `/agents/${agent.id}/deployments/${canary.id}/promote`, { token });
    expectStatus(promoted, 202);
    assert.equal(promoted.body.phase, null);
    assert.equal(await control.redis.hget(edgeKeyNames.agent(agent.slug), 'canary_percent'), null);
    const job = await waitFor('the promoted job', async () => (driver().jobOf(agent.id)?.stable === undefined && driver().jobOf(agent.id)?.count === 2 ? driver().jobOf(agent.id) : undefined));
    assert.equal(job.version, canary.agent_version);
    assert.equal(job.env.VERSION, 'two');
    expectError(await control.request('POST', `/agents/${agent.id}/deployments/${canary.id}/promote`, { token }), 409, 'NOT_A_RUNNING_CANARY');
    const audit = await control.request('GET', '/account/audit-events?action=deployment.promote', { token });
    expectStatus(audit, 200);
    assert.ok(JSON.stringify(audit.body).includes(canary.id), JSON.stringify(audit.body));
  });

  it('abort: the agent returns to the stable configuration and version, the deployment is cancelled', async () => {
    const agent = await servingAgent();
    const stable = await latestDeployment(agent.id);
    expectStatus(await deployCanary(agent.id, { percent: 50 }), 202);
    const canary = await latestDeployment(agent.id);
    const aborted = await control.request('POST', `/agents/${agent.id}/deployments/${canary.id}/abort`, { token });
    expectStatus(aborted, 202);
    assert.equal(aborted.body.status, 'cancelled');
    assert.equal(aborted.body.phase, null);
    const shown = await control.request('GET', `/agents/${agent.id}`, { token });
    assert.deepEqual(shown.body.deploy.env, []);
    assert.equal(await control.redis.exists(edgeKeyNames.canaryUpstreams(agent.slug)), 0);
    const job = await waitFor('the stable job again', async () => (driver().jobOf(agent.id)?.version === stable.agent_version ? driver().jobOf(agent.id) : undefined));
    assert.equal(job.stable, undefined);
    expectError(await control.request('POST', `/agents/${agent.id}/deployments/${canary.id}/abort`, { token }), 409, 'NOT_A_RUNNING_CANARY');
    expectError(await control.request('POST', `/agents/${agent.id}/deployments/${stable.id}/promote`, { token }), 409, 'NOT_A_RUNNING_CANARY');
  });

  it('the judge aborts a canary by its 5xx ratio once it has min_requests, with the figures as the reason', async () => {
    const agent = await servingAgent();
    expectStatus(await deployCanary(agent.id, { percent: 10, min_requests: 20 }), 202);
    const canary = await latestDeployment(agent.id);
    await waitFor('the canary to serve', async () =>
      (await control.redis.scard(edgeKeyNames.canaryUpstreams(agent.slug))) === 1 ? true : undefined);
    // The edge's figures, as authz's access logs record them: 20 canary answers, half 500s, and 180 good stable ones.
    const recorder = createRequestFigureRecorder({ redis: control.redis, flushIntervalMs: 50, onError: (error) => assert.fail(error) });
    for (let i = 0; i < 20; i++) recorder.record(agent.id, i % 2 === 0 ? 500 : 200, 12, true);
    for (let i = 0; i < 180; i++) recorder.record(agent.id, 200, 10, false);
    await recorder.close();
    await waitFor('the judge to abort', async () => {
      await control.control.loops.canaryJudge.runOnce();
      const shown = await deployment(agent.id, canary.id);
      return shown.status === 'failed' ? shown : undefined;
    });
    const failed = await deployment(agent.id, canary.id);
    assert.equal(failed.error, '5xx ratio 0.500 above max_error_ratio 0.05: canary 10 5xx of 20 (0.500), stable 0 5xx of 180 (0.000)');
    assert.equal(await control.redis.hget(edgeKeyNames.agent(agent.slug), 'canary_percent'), null);
  });

  it('the judge promotes auto_promote_after_seconds after the canary began to serve (its canary event), not after the deploy', async () => {
    const agent = await servingAgent();
    expectStatus(await deployCanary(agent.id, { percent: 10, auto_promote_after_seconds: 60 }), 202);
    const canary = await latestDeployment(agent.id);
    const serving = await waitFor('the canary to serve', async () => {
      const shown = await deployment(agent.id, canary.id);
      return shown.phase === 'canary' ? shown : undefined;
    });
    const servedSince = async () => (await control.db('deployment_events').where({ deployment_id: canary.id, phase: 'canary' }).first()).at as Date;
    assert.equal(serving.canary.started_at, (await servedSince()).toISOString(), 'started_at is when it began to serve');
    // The judge reads the wall clock (the edge's figures are stamped by it), so time passes
    // here by moving the canary event back: as if it had begun to serve that long ago.
    const servedAgo = (seconds: number) => control.db('deployment_events').where({ deployment_id: canary.id, phase: 'canary' })
      .update({ at: new Date(Date.now() - seconds * 1000) });
    const judge = () => control.control.loops.canaryJudge.runOnce();

    await servedAgo(55);
    await judge();
    const waiting = await deployment(agent.id, canary.id);
    assert.deepEqual([waiting.status, waiting.phase], ['in_progress', 'canary'], 'serving for 55 s: still watched');
    assert.equal(waiting.canary.started_at, (await servedSince()).toISOString());
    await servedAgo(61);
    await judge();
    const promoted = await deployment(agent.id, canary.id);
    assert.equal(promoted.phase, null, 'serving for 61 s: promoted');
    assert.ok(['in_progress', 'succeeded'].includes(promoted.status), promoted.status);
    const audit = await control.request('GET', '/account/audit-events?action=deployment.promote', { token });
    assert.ok(JSON.stringify(audit.body).includes(canary.id), 'recorded as a promotion');
  });
});
