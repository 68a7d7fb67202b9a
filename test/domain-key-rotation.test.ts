import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { masterKeyId, SecretBox } from '../control/crypto/secret-box.js';
import { KeyRotation } from '../control/services/key-rotation.js';
import { startControl, type TestControl } from './support/control-harness.js';
import { createAgent } from './support/control-api.js';

/** Certificate keys of custom domains and the ACME account key are sealed with the master keys: rotation carries them over. */
describe('custom domains: master-key rotation', () => {
  const [oldKey, newKey] = [randomBytes(32), randomBytes(32)];
  let control: TestControl;

  before(async () => {
    control = await startControl({ MASTER_KEY: oldKey.toString('base64') });
  });
  after(async () => control?.close());

  it("counts and re-seals a domain's certificate key and the ACME account key; a domain without a certificate is left alone", async () => {
    const { token, user } = await control.signUp();
    const agent = await createAgent(control, token);
    const old = new SecretBox([oldKey]);
    const now = new Date();
    const domain = (id: string, hostname: string, key: string | null) => ({
      id, account_id: user.account_id, agent_id: agent.id, hostname, status: key ? 'active' : 'pending_verification', verification_value: 'v',
      private_key_sealed: key === null ? null : old.seal(key), created_at: now, updated_at: now,
    });
    await control.db('agent_domains').insert([domain('dom_withkey', 'a.example.com', 'cert-private-key'), domain('dom_nokey', 'b.example.com', null)]);
    await control.db('acme_accounts').insert({ directory_url: 'https://acme.test/dir', account_url: 'https://acme.test/acct/1', key_sealed: old.seal('acme-account-key'), created_at: now });

    const rotation = new KeyRotation(control.db, new SecretBox([newKey, oldKey]), async () => {});
    const before = await rotation.status();
    assert.equal(before.find((count) => count.keyId === masterKeyId(oldKey))?.values, 2, 'the two sealed values are counted under the old key');

    const result = await rotation.rotate({ batchSize: 10 });
    assert.deepEqual({ reEncrypted: result.reEncrypted, left: result.left }, { reEncrypted: 2, left: 0 });
    const fresh = new SecretBox([newKey]);
    const [withKey, noKey] = await control.db('agent_domains').orderBy('id', 'desc').select('id', 'private_key_sealed');
    assert.equal(withKey.id, 'dom_withkey');
    assert.ok(withKey.private_key_sealed.startsWith(`v2.${masterKeyId(newKey)}.`));
    assert.equal(fresh.open(withKey.private_key_sealed), 'cert-private-key');
    assert.equal(noKey.private_key_sealed, null);
    const account = await control.db('acme_accounts').first();
    assert.equal(fresh.open(account.key_sealed), 'acme-account-key');
    assert.equal((await rotation.status()).find((count) => count.keyId === masterKeyId(oldKey))?.values, 0);
  });
});
