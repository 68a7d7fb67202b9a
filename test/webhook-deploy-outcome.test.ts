import assert from 'node:assert/strict';
import pino from 'pino';
import { systemClock } from '../contract/clock.js';
import type { AgentRow } from '../control/domain/agent.js';
import type { JobStatus, Replica } from '../control/domain/job.js';
import { repositoriesOn } from '../control/repositories/index.js';
import { DeploymentTracker } from '../control/services/deployment-tracker.js';
import { EventNotifier } from '../control/services/event-notifier.js';
import { WebhookEvents } from '../control/services/webhook-events.js';
import { startControl, type TestControl } from './support/control-harness.js';
import { createAgent, expectStatus } from './support/control-api.js';

/**
 * A deployment's end puts agent.deployed or agent.deploy_failed in the outbox with the
 * transaction that records it, once, on real Postgres and without containers: the tracker
 * is fed job states as the agent runner feeds it.
 */
describe('webhooks: a deployment\'s end in the outbox', () => {
  let control: TestControl;
  let tracker: DeploymentTracker;

  before(async () => {
    control = await startControl();
    const presenter = { agentUrl: control.config.agentUrl, runtimeImage: control.config.runtimeImage };
    tracker = new DeploymentTracker(control.db, systemClock, new EventNotifier(), pino({ level: 'silent' }), new WebhookEvents(systemClock, presenter));
  });
  after(async () => control?.close());

  const replica = (version: number, state: Replica['state'], error: string | null = null): Replica => ({ id: 'r1', version, state, address: null, restarts: 2, startedAt: null, error });
  const job = (agent: AgentRow, ...replicas: Replica[]): JobStatus => ({ agentId: agent.id, version: agent.deployed_version!, count: 1, replicas, events: [] });
  const outbox = async () => (await control.db('webhook_outbox').orderBy('id').select('event_type', 'body')).map((row) => ({ type: row.event_type, event: JSON.parse(row.body) }));

  async function subscribedAgent(): Promise<AgentRow> {
    const { token } = await control.signUp();
    expectStatus(await control.request('POST', '/account/webhooks', { token, body: { url: 'https://hooks.example.com/in', events: ['agent.deployed', 'agent.deploy_failed'] } }), 201);
    const created = await createAgent(control, token, { deploy: { replicas: 1 } });
    await control.db('webhook_outbox').delete();
    return (await repositoriesOn(control.db).agents.findAny(created.id))!;
  }

  it('writes agent.deploy_failed with the deployment and its reason, once however often the job is seen', async () => {
    const agent = await subscribedAgent();
    const crashed = job(agent, replica(agent.deployed_version!, 'crashed', 'exited with code 3; restarted 2 times'));
    await tracker.settle(agent, crashed);
    await tracker.settle(agent, crashed);
    const written = await outbox();
    assert.deepEqual(written.map((w) => w.type), ['agent.deploy_failed']);
    const { event } = written[0]!;
    assert.equal(event.type, 'agent.deploy_failed');
    assert.equal(event.data.agent.id, agent.id);
    assert.equal(event.data.deployment.status, 'failed');
    assert.equal(event.data.reason, 'exited with code 3; restarted 2 times');
  });

  it('writes agent.deployed when the replicas of the version run, without a reason', async () => {
    const agent = await subscribedAgent();
    await tracker.settle(agent, job(agent, replica(agent.deployed_version!, 'starting')));
    assert.deepEqual(await outbox(), [], 'nothing while the rollout goes on');
    await tracker.settle(agent, job(agent, replica(agent.deployed_version!, 'running')));
    const [written] = await outbox();
    assert.equal(written!.type, 'agent.deployed');
    assert.equal(written!.event.data.deployment.status, 'succeeded');
    assert.ok(!('reason' in written!.event.data));
  });
});
