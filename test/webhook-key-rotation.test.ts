import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { masterKeyId, SecretBox } from '../control/crypto/secret-box.js';
import { KeyRotation } from '../control/services/key-rotation.js';
import { startControl, type TestControl } from './support/control-harness.js';
import { createAgent, expectStatus } from './support/control-api.js';
import { waitFor } from './support/wait.js';
import { WebhookReceiver } from './support/webhook-receiver.js';

/** A webhook's signing secret is sealed with the master keys, so a key rotation must carry it over like the agents' secrets. */
describe('webhooks: master-key rotation', () => {
  const [oldKey, newKey] = [randomBytes(32), randomBytes(32)];
  const controls: TestControl[] = [];
  let receiver: WebhookReceiver;

  before(async () => {
    receiver = await new WebhookReceiver().start();
  });
  after(async () => {
    for (const control of controls.reverse()) {
      await control.control.loops.webhooks.stop();
      await control.close();
    }
    await receiver.close();
  });

  it('re-seals the secret under the new key, and a control with only the new key signs with the secret the account was shown', async () => {
    // The receiver listens on 127.0.0.1, which a URL may name only with private networks allowed.
    const first = await startControl({ MASTER_KEY: oldKey.toString('base64'), WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' });
    controls.push(first);
    const { token } = await first.signUp();
    const created = await first.request('POST', '/account/webhooks', { token, body: { url: receiver.url(), events: ['agent.deployed'] } });
    expectStatus(created, 201);

    const status = await new KeyRotation(first.db, new SecretBox([newKey, oldKey])).rotate({ batchSize: 10 });
    assert.equal(status.left, 0);
    const [row] = await first.db('webhooks').where({ id: created.body.id }).select('secret_sealed');
    assert.ok(row.secret_sealed.startsWith(`v2.${masterKeyId(newKey)}.`));
    assert.equal(new SecretBox([newKey]).open(row.secret_sealed), created.body.secret);

    const second = await startControl({ MASTER_KEY: newKey.toString('base64'), WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' }, { resume: { database: first.database } });
    controls.push(second);
    second.control.loops.webhooks.start();
    await createAgent(second, token, { deploy: { replicas: 0 } });
    const [request] = await waitFor('the delivery', async () => (receiver.received.length ? receiver.received : undefined), 10_000, 20);
    new Webhook(created.body.secret).verify(request!.body, request!.headers as Record<string, string>);
  });
});
