import assert from 'node:assert/strict';
import { repositoriesOn } from '../control/repositories/index.js';
import { startControl, type TestControl } from './support/control-harness.js';
import { createAgent, expectStatus } from './support/control-api.js';
import { waitFor } from './support/wait.js';
import { WebhookReceiver } from './support/webhook-receiver.js';

const FAST_RETRIES = { WEBHOOK_RETRY_BASE_MS: '20', WEBHOOK_RETRY_MAX_MS: '100', WEBHOOK_POLL_INTERVAL_MS: '200' };

/** Delivery across copies of the control API on one database, across a restart, and the address check. */
describe('webhooks: delivery across copies, restarts and the address check', () => {
  let receiver: WebhookReceiver;
  const controls: TestControl[] = [];

  const start = async (env: Record<string, string>, resume?: TestControl) => {
    const control = await startControl({ ...FAST_RETRIES, ...env }, resume ? { resume: { database: resume.database } } : {});
    controls.push(control);
    return control;
  };
  const stop = async (control: TestControl) => {
    await control.control.loops.webhooks.stop();
    await control.close();
    controls.splice(controls.indexOf(control), 1);
  };
  const subscribe = async (control: TestControl, token: string) => {
    const created = await control.request('POST', '/account/webhooks', { token, body: { url: receiver.url(), events: ['agent.deployed', 'agent.deleted'] } });
    expectStatus(created, 201);
    return created.body as { id: string };
  };
  /** The webhook's recorded attempts, newest first, once there are `count` of them. */
  const recordedDeliveries = async (control: TestControl, hookId: string, token: string, count: number) => {
    const listed = await control.request('GET', `/account/webhooks/${hookId}/deliveries`, { token });
    return listed.body.deliveries.length >= count ? (listed.body.deliveries as any[]) : undefined;
  };

  beforeEach(async () => {
    receiver = await new WebhookReceiver().start();
  });
  afterEach(async () => {
    for (const control of [...controls].reverse()) await stop(control);
    await receiver.close();
  });

  it('refuses a receiver on 127.0.0.1 without WEBHOOK_ALLOW_PRIVATE_NETWORKS, before opening any connection, and records why', async () => {
    // Saved while private networks were allowed (without, the URL is a 422: webhooks-api.test.ts),
    // delivered by a copy that no longer allows them: the address is checked again at each delivery.
    const saving = await start({ WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' });
    const { token } = await saving.signUp();
    const hook = await subscribe(saving, token);
    const control = await start({ WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'false' }, saving);
    control.control.loops.webhooks.start();
    await createAgent(control, token, { deploy: { replicas: 0 } });
    const attempts = await waitFor('a refused attempt', () => recordedDeliveries(control, hook.id, token, 1), 10_000, 20);
    assert.equal(attempts.at(-1).status_code, null);
    assert.match(attempts.at(-1).error, /^refused: 127\.0\.0\.1 resolves to 127\.0\.0\.1, a loopback address \(WEBHOOK_ALLOW_PRIVATE_NETWORKS is off\)$/);
    assert.equal(receiver.connections, 0);
    assert.equal(receiver.received.length, 0);
  });

  it('with two copies on one database, each event reaches the receiver exactly once', async () => {
    const first = await start({ WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' });
    const second = await start({ WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' }, first);
    const { token } = await first.signUp();
    await subscribe(first, token);
    // Written before either dispatcher runs, so both find all of them due at once and race for them.
    const events = 12;
    for (let i = 0; i < events / 2; i += 1) {
      const agent = await createAgent(first, token, { deploy: { replicas: 0 } });
      expectStatus(await first.request('DELETE', `/agents/${agent.id}`, { token }), 204);
    }
    first.control.loops.webhooks.start();
    second.control.loops.webhooks.start();
    await waitFor('every event', async () => (receiver.received.length >= events ? true : undefined), 10_000, 20);
    // Both have drained the outbox: nothing more can come.
    await waitFor('an empty outbox', async () => (Number((await first.db('webhook_outbox').count({ n: '*' }))[0]!.n) === 0 ? true : undefined), 10_000, 20);
    await Promise.all([first.control.loops.webhooks.runOnce(), second.control.loops.webhooks.runOnce()]);
    const ids = receiver.received.map((r) => String(r.headers['webhook-id']));
    assert.equal(ids.length, events);
    assert.equal(new Set(ids).size, events);
    assert.equal(Number((await first.db('webhook_deliveries').count({ n: '*' }))[0]!.n), events, 'one attempt per event');
  });

  it('a copy stopped between attempts loses nothing: the next one carries on from Postgres', async () => {
    receiver.answer({ status: 500 });
    const first = await start({ WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' });
    first.control.loops.webhooks.start();
    const { token } = await first.signUp();
    const hook = await subscribe(first, token);
    await createAgent(first, token, { deploy: { replicas: 0 } });
    await waitFor('a failed attempt', async () => (receiver.received.length > 0 ? true : undefined), 10_000, 20);
    await stop(first);
    const failures = receiver.received.length;

    receiver.answer({ status: 200 });
    const second = await start({ WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' }, first);
    second.control.loops.webhooks.start();
    // Recorded, not only received: the receiver has the request before the copy writes down its answer.
    const deliveries = await waitFor('the delivery recorded', () => recordedDeliveries(second, hook.id, token, failures + 1), 10_000, 20);
    const attempts = deliveries.reverse();
    assert.deepEqual(attempts.map((a: any) => a.attempt), Array.from({ length: failures + 1 }, (_, i) => i + 1));
    assert.deepEqual(attempts.map((a: any) => a.status_code), [...Array<number>(failures).fill(500), 200]);
    assert.equal(new Set(receiver.received.map((r) => r.headers['webhook-id'])).size, 1);
  });

  it('a delivery claimed by a copy that died mid-attempt is made again once its claim lapses', async () => {
    const control = await start({ WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' });
    const { token } = await control.signUp();
    const hook = await subscribe(control, token);
    await createAgent(control, token, { deploy: { replicas: 0 } });
    // A copy claims the delivery and dies before recording anything: the row is leased, not lost.
    const [claimed] = await repositoriesOn(control.db).webhookOutbox.claimDue(10, 60_000);
    assert.equal(claimed!.attempt, 1);
    await control.control.loops.webhooks.runOnce();
    assert.equal(receiver.received.length, 0, 'not due while the claim holds');
    // The lease lapses (as 40 s after a real claim).
    await control.db('webhook_outbox').where({ id: claimed!.id }).update({ next_attempt_at: control.db.raw('now()') });
    control.control.loops.webhooks.start();
    const deliveries = await waitFor('the delivery recorded', () => recordedDeliveries(control, hook.id, token, 1), 10_000, 20);
    assert.deepEqual(deliveries.map((d: any) => [d.attempt, d.status_code]), [[2, 200]], 'the lost attempt counts as made');
    assert.equal(receiver.received[0]!.headers['webhook-id'], claimed!.event_id);
  });
});
