import assert from 'node:assert/strict';
import pino from 'pino';
import { systemClock } from '../contract/clock.js';
import type { AgentRow } from '../control/domain/agent.js';
import type { JobStatus, Replica, RolloutProgress } from '../control/domain/job.js';
import { repositoriesOn } from '../control/repositories/index.js';
import { DeploymentTracker } from '../control/services/deployment-tracker.js';
import { EventNotifier } from '../control/services/event-notifier.js';
import { startControl, type TestControl } from './support/control-harness.js';

/**
 * The deployment tracker on real Postgres, fed as the drivers and the agent runner feed it,
 * without containers: what it records of each step, and how it ends a deployment.
 */
describe('deployment tracker (control/services/deployment-tracker.ts)', function () {
  this.timeout(60_000);
  let control: TestControl;
  let token: string;
  let tracker: DeploymentTracker;
  const notifier = new EventNotifier();

  before(async () => {
    control = await startControl();
    tracker = new DeploymentTracker(control.db, systemClock, notifier, pino({ level: 'silent' }));
  });
  after(async () => control?.close());
  // An account each: the free plan's replicas are few.
  beforeEach(async () => ({ token } = await control.signUp()));

  /** An agent deployed once (no driver here: its deployment stays in progress until the tracker ends it). */
  async function deployedAgent(): Promise<{ agent: AgentRow; deploymentId: string }> {
    const created = await control.request('POST', '/agents', { token, body: { name: `tracked-${Math.random().toString(36).slice(2, 7)}`, api_key: 'sk-test', deploy: { replicas: 1 } } });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const agent = (await repositoriesOn(control.db).agents.findAny(created.body.id))!;
    const listed = await control.request('GET', `/agents/${agent.id}/deployments`, { token });
    return { agent, deploymentId: listed.body.deployments[0].id };
  }

  const step = (agent: AgentRow, phase: RolloutProgress['phase'], replicaId: string | null, message: string, extra: Partial<RolloutProgress> = {}): RolloutProgress =>
    ({ agentId: agent.id, version: agent.deployed_version!, phase, replicaId, message, at: new Date(), ...extra });
  const events = async (deploymentId: string) =>
    (await repositoriesOn(control.db).deployments.eventsAfter(deploymentId, 0)).map((e) => [e.phase, e.replica_id, e.message]);
  const deployment = async (agent: AgentRow, id: string) => (await control.request('GET', `/agents/${agent.id}/deployments/${id}`, { token })).body;
  const replica = (id: string, version: number, state: Replica['state'], error: string | null = null): Replica => ({ id, version, state, address: null, restarts: 0, startedAt: null, error });
  const job = (agent: AgentRow, ...replicas: Replica[]): JobStatus => ({ agentId: agent.id, version: agent.deployed_version!, count: 1, replicas, events: [] });

  it('records each step once, in order, and the orchestrator\'s job version', async () => {
    const { agent, deploymentId } = await deployedAgent();
    await tracker.record(step(agent, 'starting', null, 'registered as version 0 of Nomad job x', { orchestratorVersion: 0 }));
    await tracker.record(step(agent, 'starting', 'r1', 'placed'));
    await tracker.record(step(agent, 'starting', 'r1', 'placed again after a restart of the control API'));
    await tracker.record(step(agent, 'starting', null, 'registered as version 0 of Nomad job x', { orchestratorVersion: 0 }));
    await tracker.record(step(agent, 'starting', null, 'registered as version 1 of Nomad job x', { orchestratorVersion: 1 }));
    await tracker.record(step(agent, 'routing', 'r1', 'checks pass'));
    assert.deepEqual(await events(deploymentId), [
      ['queued', null, 'deployment 1 queued'],
      ['starting', null, 'registered as version 0 of Nomad job x'],
      ['starting', 'r1', 'placed'],
      ['starting', null, 'registered as version 1 of Nomad job x'],
      ['routing', 'r1', 'checks pass'],
    ]);
    assert.equal((await deployment(agent, deploymentId)).nomad_job_version, 1);
  });

  it('drops a step of a version with no deployment in progress', async () => {
    const { agent, deploymentId } = await deployedAgent();
    await tracker.record(step(agent, 'starting', 'r9', 'a later scale', { version: agent.deployed_version! + 7 }));
    assert.deepEqual((await events(deploymentId)).map(([phase]) => phase), ['queued']);
  });

  it('ends a deployment succeeded once, with a last event, when its replicas run; and wakes the streams that wait', async () => {
    const { agent, deploymentId } = await deployedAgent();
    await tracker.settle(agent, job(agent, replica('r1', agent.deployed_version!, 'starting')));
    assert.equal((await deployment(agent, deploymentId)).status, 'in_progress');
    const woken = notifier.next(deploymentId, 600_000, new AbortController().signal);
    await tracker.settle(agent, job(agent, replica('r1', agent.deployed_version!, 'running')));
    await woken;
    await tracker.settle(agent, job(agent, replica('r1', agent.deployed_version!, 'running')));
    await tracker.record(step(agent, 'draining', 'old', 'too late'));
    const ended = await deployment(agent, deploymentId);
    assert.equal(ended.status, 'succeeded');
    assert.notEqual(ended.finished_at, null);
    assert.deepEqual((await events(deploymentId)).map(([phase]) => phase), ['queued', 'succeeded'], 'one end, nothing after it');
  });

  it('ends a deployment failed with the replica\'s reason; a newer deploy that superseded it wins', async () => {
    const { agent, deploymentId } = await deployedAgent();
    await tracker.settle(agent, job(agent, replica('r1', agent.deployed_version!, 'crashed', 'exited with code 3; restarted 2 times')));
    const failed = await deployment(agent, deploymentId);
    assert.deepEqual([failed.status, failed.error], ['failed', 'exited with code 3; restarted 2 times']);
    assert.deepEqual((await events(deploymentId)).at(-1), ['failed', null, 'exited with code 3; restarted 2 times']);

    const other = await deployedAgent();
    const redeploy = await control.request('POST', `/agents/${other.agent.id}/deploy`, { token, body: {} });
    assert.equal(redeploy.status, 202, JSON.stringify(redeploy.body));
    await tracker.settle(other.agent, job(other.agent, replica('r1', other.agent.deployed_version!, 'running')));
    assert.equal((await deployment(other.agent, other.deploymentId)).status, 'superseded');
    assert.deepEqual((await events(other.deploymentId)).map(([phase]) => phase), ['queued']);
  });
});
