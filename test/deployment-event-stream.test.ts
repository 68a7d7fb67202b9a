import assert from 'node:assert/strict';
import pino from 'pino';
import { systemClock } from '../contract/clock.js';
import { repositoriesOn } from '../control/repositories/index.js';
import { DeploymentTracker } from '../control/services/deployment-tracker.js';
import { EventNotifier } from '../control/services/event-notifier.js';
import { startControl, type TestControl } from './support/control-harness.js';
import { SseReader } from './support/orch-helpers.js';

/**
 * The event stream's rules without containers: a deployment that ended without a terminal
 * step (superseded) still ends its stream with `end`, and steps written by another copy of
 * the control API (here a tracker of the test's own, which this control's streams are not
 * told about) reach a stream that is following.
 */
describe('deployment event stream: end and follow (no driver)', function () {
  this.timeout(60_000);
  let control: TestControl;
  let token: string;

  before(async () => {
    control = await startControl();
    ({ token } = await control.signUp());
  });
  after(async () => control?.close());

  const open = (agentId: string, deploymentId: string, headers: Record<string, string> = {}) =>
    SseReader.open(`${control.baseUrl}/agents/${agentId}/deployments/${deploymentId}/events`, { Authorization: `Bearer ${token}`, ...headers });

  async function deployed(name: string) {
    const created = await control.request('POST', '/agents', { token, body: { name, api_key: 'sk-test', deploy: { replicas: 1 } } });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const listed = await control.request('GET', `/agents/${created.body.id}/deployments`, { token });
    return { agentId: created.body.id as string, deploymentId: listed.body.deployments[0].id as string };
  }

  it('a superseded deployment replays its steps, then ends with end {status: superseded}', async () => {
    const { agentId, deploymentId } = await deployed('superseded');
    assert.equal((await control.request('POST', `/agents/${agentId}/deploy`, { token, body: {} })).status, 202);
    const reader = await open(agentId, deploymentId, { 'Last-Event-ID': 'not-a-number' });
    await reader.ends();
    assert.deepEqual(reader.frames.map((f) => f.event), ['progress', 'end'], 'an unusable Last-Event-ID replays from the start');
    assert.equal(JSON.parse(reader.frames[0]!.data).phase, 'queued');
    assert.deepEqual(JSON.parse(reader.frames[1]!.data), { status: 'superseded' });
  });

  it('follows steps another copy of the control API writes, and ends after the terminal one', async () => {
    const { agentId, deploymentId } = await deployed('followed');
    const reader = await open(agentId, deploymentId);
    await reader.next('the queued step', (f) => f.event === 'progress');
    const elsewhere = new DeploymentTracker(control.db, systemClock, new EventNotifier(), pino({ level: 'silent' }));
    const agent = (await repositoriesOn(control.db).agents.findAny(agentId))!;
    const version = agent.deployed_version!;
    await elsewhere.record({ agentId, version, phase: 'routing', replicaId: 'r1', message: 'port accepts connections', at: new Date() });
    const routed = await reader.next('the routing step', (f) => f.event === 'progress' && JSON.parse(f.data).phase === 'routing');
    assert.deepEqual(JSON.parse(routed.data).replica_id, 'r1');
    assert.equal(reader.ended, false, 'still following');
    await elsewhere.settle(agent, { agentId, version, count: 1, events: [], replicas: [{ id: 'r1', version, state: 'running', address: null, restarts: 0, startedAt: null, error: null }] });
    await reader.ends();
    assert.deepEqual(reader.frames.map((f) => f.event === 'progress' ? JSON.parse(f.data).phase : f.event), ['queued', 'routing', 'succeeded', 'end']);
  });

  it('answers 404 NOT_FOUND for another account\'s agent', async () => {
    const { agentId, deploymentId } = await deployed('private');
    const stranger = await control.signUp();
    const response = await control.request('GET', `/agents/${agentId}/deployments/${deploymentId}/events`, { token: stranger.token });
    assert.equal(response.status, 404);
    assert.equal(response.body.code, 'NOT_FOUND');
  });
});
