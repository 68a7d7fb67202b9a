import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { startControl, type TestControl } from './support/control-harness.js';
import { createAgent, expectError, expectStatus } from './support/control-api.js';
import { waitFor } from './support/wait.js';
import { WebhookReceiver } from './support/webhook-receiver.js';

/** Retries in test time: waits of at most 100 ms, a poll every 200 ms. */
const FAST_RETRIES = { WEBHOOK_RETRY_BASE_MS: '20', WEBHOOK_RETRY_MAX_MS: '100', WEBHOOK_POLL_INTERVAL_MS: '200' };
/** The receivers listen on 127.0.0.1, which only a single-host install allows. */
const LOCAL_RECEIVERS = { ...FAST_RETRIES, WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' };

/** The signature as the Standard Webhooks spec defines it, computed here without the library the platform uses. */
function independentSignature(secret: string, id: string, timestamp: string, body: string): string {
  const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
  return `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64')}`;
}

/** Delivery from the Postgres outbox to a real HTTP receiver on 127.0.0.1, with the control's own dispatcher. */
describe('webhooks: delivery', () => {
  let control: TestControl;
  let receiver: WebhookReceiver;

  before(async () => {
    control = await startControl(LOCAL_RECEIVERS);
    control.control.loops.webhooks.start();
  });
  beforeEach(async () => {
    receiver = await new WebhookReceiver().start();
  });
  afterEach(async () => receiver.close());
  after(async () => {
    await control?.control.loops.webhooks.stop();
    await control?.close();
  });

  const subscribe = async (token: string, events: string[], path = '/hook') => {
    const created = await control.request('POST', '/account/webhooks', { token, body: { url: receiver.url(path), events } });
    expectStatus(created, 201);
    return created.body as { id: string; secret: string };
  };
  const deliveries = async (token: string, webhookId: string) => {
    const listed = await control.request('GET', `/account/webhooks/${webhookId}/deliveries`, { token });
    expectStatus(listed, 200);
    return listed.body.deliveries as any[];
  };

  it('delivers agent.deployed, signed per Standard Webhooks, with the agent and deployment as the API shows them', async () => {
    const { token } = await control.signUp();
    const hook = await subscribe(token, ['agent.deployed']);
    // 0 replicas: the deployment succeeds as it is recorded, no orchestrator needed (the podman suite deploys for real).
    const agent = await createAgent(control, token, { deploy: { replicas: 0, env: [{ key: 'TOKEN', value: 'do-not-send-me', secret: true }] } });

    const [request] = await waitFor('the delivery', async () => (receiver.received.length > 0 ? receiver.received : undefined), 10_000, 20);
    const { headers, body } = request!;
    assert.equal(headers['content-type'], 'application/json');
    assert.match(String(headers['webhook-id']), /^evt_[0-9A-Za-z]{20}$/);
    assert.ok(Math.abs(Number(headers['webhook-timestamp']) - Date.now() / 1000) < 300, 'the timestamp is of this attempt, in seconds');
    // Both an independent HMAC and the official library accept the signature.
    assert.equal(headers['webhook-signature'], independentSignature(hook.secret, String(headers['webhook-id']), String(headers['webhook-timestamp']), body));
    new Webhook(hook.secret).verify(body, headers as Record<string, string>);

    const event = JSON.parse(body);
    assert.deepEqual(Object.keys(event).sort(), ['data', 'timestamp', 'type']);
    assert.equal(event.type, 'agent.deployed');
    assert.equal(event.data.agent.id, agent.id);
    assert.equal(event.data.deployment.agent_id, agent.id);
    assert.equal(event.data.deployment.status, 'succeeded');
    assert.deepEqual(event.data.agent.deploy.env, [{ key: 'TOKEN', value: '***', secret: true }]);
    assert.ok(!body.includes('do-not-send-me'), 'no secret value is sent');

    const attempts = await waitFor('the attempt recorded', async () => ((await deliveries(token, hook.id)).length ? deliveries(token, hook.id) : undefined), 5000, 20);
    assert.equal(attempts.length, 1);
    assert.deepEqual({ ...attempts[0], duration_ms: 0, at: '' }, { event_id: headers['webhook-id'], event_type: 'agent.deployed', attempt: 1, status_code: 200, duration_ms: 0, error: null, at: '' });
  });

  it('sends each webhook only the events it subscribed to: agent.deleted on delete', async () => {
    const { token } = await control.signUp();
    await subscribe(token, ['agent.deleted']);
    const agent = await createAgent(control, token, { deploy: { replicas: 0 } });
    expectStatus(await control.request('DELETE', `/agents/${agent.id}`, { token }), 204);
    const [request] = await waitFor('agent.deleted', async () => (receiver.received.length > 0 ? receiver.received : undefined), 10_000, 20);
    const event = JSON.parse(request!.body);
    assert.equal(event.type, 'agent.deleted');
    assert.equal(event.data.agent.id, agent.id);
    await control.control.loops.webhooks.runOnce();
    assert.deepEqual(receiver.received.map((r) => JSON.parse(r.body).type), ['agent.deleted'], 'agent.deployed was not subscribed');
  });

  it('announces quota.exceeded when the plan refuses a scale, though the refused change rolls back', async () => {
    const { token } = await control.signUp();
    await subscribe(token, ['quota.exceeded']);
    const agent = await createAgent(control, token, { deploy: { replicas: 3 } });
    expectError(await control.request('POST', `/agents/${agent.id}/scale`, { token, body: { direction: 'up', count: 1 } }), 403, 'QUOTA_EXCEEDED');
    const [request] = await waitFor('quota.exceeded', async () => (receiver.received.length > 0 ? receiver.received : undefined), 10_000, 20);
    const event = JSON.parse(request!.body);
    assert.equal(event.type, 'quota.exceeded');
    assert.equal(event.data.agent.id, agent.id);
    assert.equal(event.data.agent.deploy.replicas, 3, 'the agent as it stays');
    assert.match(event.data.reason, /max_replicas is 3; this request needs 4/);
  });

  it('retries a receiver that fails twice and delivers on the third attempt, with the same id and body each time', async () => {
    receiver.answer({ status: 500 }, { status: 503 }, { status: 200 });
    const { token } = await control.signUp();
    const hook = await subscribe(token, ['agent.deployed']);
    await createAgent(control, token, { deploy: { replicas: 0 } });

    const attempts = await waitFor('three attempts', async () => {
      const listed = await deliveries(token, hook.id);
      return listed.length === 3 ? listed : undefined;
    }, 10_000, 20);
    assert.deepEqual(attempts.map((a) => [a.attempt, a.status_code, a.error]), [[3, 200, null], [2, 503, 'answered 503'], [1, 500, 'answered 500']]);
    assert.equal(receiver.received.length, 3);
    assert.equal(new Set(receiver.received.map((r) => r.headers['webhook-id'])).size, 1);
    assert.equal(new Set(receiver.received.map((r) => r.body)).size, 1);
    for (const { headers, body } of receiver.received) new Webhook(hook.secret).verify(body, headers as Record<string, string>);
    assert.equal((await control.db('webhook_outbox').count({ n: '*' }))[0]!.n, '0', 'a delivered event leaves the outbox');
  });

  it('does not follow a redirect: a 3xx is a failed attempt', async () => {
    receiver.answer({ status: 302, headers: { location: '/elsewhere' } });
    const { token } = await control.signUp();
    const hook = await subscribe(token, ['agent.deployed']);
    await createAgent(control, token, { deploy: { replicas: 0 } });
    const attempts = await waitFor('a failed attempt', async () => ((await deliveries(token, hook.id)).length ? deliveries(token, hook.id) : undefined), 10_000, 20);
    assert.equal(attempts.at(-1).status_code, 302);
    assert.equal(attempts.at(-1).error, 'answered 302 (redirects are not followed)');
    // Deleting the webhook drops what it still had to retry.
    expectStatus(await control.request('DELETE', `/account/webhooks/${hook.id}`, { token }), 204);
    assert.ok(receiver.received.length >= 1);
    assert.ok(receiver.received.every((r) => r.path === '/hook'), 'nothing was sent to the Location');
  });

  it('gives up once the retry window is over, and says so', async () => {
    receiver.answer({ status: 500 });
    const { token } = await control.signUp();
    const hook = await subscribe(token, ['agent.deployed']);
    await createAgent(control, token, { deploy: { replicas: 0 } });
    await waitFor('a first attempt', async () => ((await deliveries(token, hook.id)).length ? true : undefined), 10_000, 20);
    // The event is made 25 hours old: its next attempt is past the 24-hour window.
    await control.db('webhook_outbox').where({ webhook_id: hook.id }).update({ created_at: control.db.raw("now() - interval '25 hours'"), next_attempt_at: control.db.raw('now()') });
    const last = await waitFor('giving up', async () => {
      const [newest] = await deliveries(token, hook.id);
      return newest?.error?.includes('gave up') ? newest : undefined;
    }, 10_000, 20);
    assert.match(last.error, /^answered 500; gave up after \d+ attempts$/);
    assert.equal((await control.db('webhook_outbox').count({ n: '*' }))[0]!.n, '0');
  });
});
