import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { startControl, type TestControl } from './support/control-harness.js';
import { createAgent, expectStatus } from './support/control-api.js';
import { waitFor } from './support/wait.js';
import { WebhookReceiver, type Received } from './support/webhook-receiver.js';

/** The signature as the Standard Webhooks spec defines it, computed without the library the platform signs with. */
function verifyIndependently(secret: string, { headers, body }: Received): void {
  const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
  const expected = createHmac('sha256', key).update(`${headers['webhook-id']}.${headers['webhook-timestamp']}.${body}`).digest('base64');
  assert.equal(headers['webhook-signature'], `v1,${expected}`);
}

/** Events of real rollouts on podman reach a receiver on 127.0.0.1: a deploy that lands, a delete, an image that exits at once. */
describe('webhooks on podman: agent.deployed, agent.deleted, agent.crashed', function () {
  this.timeout(240_000);
  let control: TestControl;
  let receiver: WebhookReceiver;
  let token: string;
  let secret: string;

  before(async () => {
    receiver = await new WebhookReceiver().start();
    control = await startControl({ WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', WEBHOOK_POLL_INTERVAL_MS: '200' }, { orchestrate: true });
    control.control.loops.webhooks.start();
    ({ token } = await control.signUp());
    const created = await control.request('POST', '/account/webhooks', {
      token,
      body: { url: receiver.url(), events: ['agent.deployed', 'agent.deploy_failed', 'agent.crashed', 'agent.deleted'] },
    });
    expectStatus(created, 201);
    secret = created.body.secret;
  });
  after(async () => {
    await control?.control.loops.webhooks.stop();
    await control?.close();
    await receiver?.close();
  });

  const eventsOf = (agentId: string) => receiver.received.map((r) => ({ request: r, event: JSON.parse(r.body) })).filter(({ event }) => event.data.agent.id === agentId);
  const waitForEvent = (agentId: string, type: string) =>
    waitFor(`${type} for ${agentId}`, async () => eventsOf(agentId).find(({ event }) => event.type === type), 120_000, 100);

  it('sends agent.deployed once a real deploy is running, and agent.deleted on delete, each signed', async () => {
    const agent = await createAgent(control, token, { deploy: { replicas: 1 } });
    const deployed = await waitForEvent(agent.id, 'agent.deployed');
    verifyIndependently(secret, deployed.request);
    assert.equal(deployed.event.data.agent.status, 'running');
    assert.equal(deployed.event.data.deployment.status, 'succeeded');
    assert.equal(deployed.event.data.deployment.number, 1);

    expectStatus(await control.request('DELETE', `/agents/${agent.id}`, { token }), 204);
    const deleted = await waitForEvent(agent.id, 'agent.deleted');
    verifyIndependently(secret, deleted.request);
    assert.deepEqual(eventsOf(agent.id).map(({ event }) => event.type), ['agent.deployed', 'agent.deleted']);
  });

  it('sends agent.crashed, once, for an image that exits at once', async () => {
    const agent = await createAgent(control, token, { deploy: { replicas: 1, env: [{ key: 'MODE', value: 'exit' }] } });
    const crashed = await waitForEvent(agent.id, 'agent.crashed');
    verifyIndependently(secret, crashed.request);
    assert.equal(crashed.event.data.agent.status, 'crashed');
    assert.match(crashed.event.data.reason, /exited with code 3/);
    // Later refreshes see it crashed still: no second announcement.
    await control.control.services.runner!.refresh(agent.id);
    await control.control.loops.webhooks.runOnce();
    assert.equal(eventsOf(agent.id).filter(({ event }) => event.type === 'agent.crashed').length, 1);
  });
});
