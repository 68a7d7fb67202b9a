import assert from 'node:assert/strict';
import { sha256Hex } from '../control/crypto/tokens.js';
import { startControl, type TestControl } from './support/control-harness.js';
import { createAgent, databaseText, expectError, expectStatus, signUpMember } from './support/control-api.js';

describe('control API: personal API keys', () => {
  let control: TestControl;

  before(async () => {
    control = await startControl();
  });
  after(async () => control?.close());

  async function createKey(token: string, label = 'ci') {
    const response = await control.request('POST', '/api-keys', { token, body: { label } });
    expectStatus(response, 201);
    return response.body;
  }

  it('creates a key: 201 {id, label, key, key_preview, created_at} with an agnt_ key', async () => {
    const { token } = await control.signUp();
    const key = await createKey(token, 'deploy script');
    assert.deepEqual(Object.keys(key).sort(), ['created_at', 'id', 'key', 'key_preview', 'label']);
    assert.equal(key.label, 'deploy script');
    assert.match(key.key, /^agnt_[0-9A-Za-z]+$/);
    assert.equal(key.key_preview, `${key.key.slice(0, 'agnt_'.length + 4)}…`);
    assert.ok(!Number.isNaN(Date.parse(key.created_at)));
  });

  it('lists the caller\'s keys without the secret', async () => {
    const { token } = await control.signUp();
    const first = await createKey(token, 'first');
    const second = await createKey(token, 'second');
    const other = await control.signUp();
    await createKey(other.token, 'not mine');

    const response = await control.request('GET', '/api-keys', { token });
    expectStatus(response, 200);
    const keys = response.body.api_keys;
    assert.deepEqual(keys.map((k: any) => k.id).sort(), [first.id, second.id].sort());
    for (const listed of keys) {
      assert.equal(listed.key, undefined);
      assert.deepEqual(Object.keys(listed).sort(), ['created_at', 'id', 'key_preview', 'label']);
    }
    assert.ok(!JSON.stringify(response.body).includes(first.key));
  });

  it('authenticates with an agnt_ key on the other endpoints', async () => {
    const { token, user } = await control.signUp();
    const { key } = await createKey(token);
    const me = await control.request('GET', '/auth/me', { token: key });
    expectStatus(me, 200);
    assert.equal(me.body.id, user.id);
    expectStatus(await control.request('GET', '/agents', { token: key }), 200);
    const agent = await createAgent(control, key, { name: 'made with a key' });
    expectStatus(await control.request('GET', `/agents/${agent.id}`, { token: key }), 200);
    expectStatus(await control.request('GET', '/account/usage', { token: key }), 200);
  });

  it('refuses to manage personal keys with an agnt_ key: 403 AUTHORISATION_DENIED', async () => {
    const { token } = await control.signUp();
    const created = await createKey(token);
    expectError(await control.request('POST', '/api-keys', { token: created.key, body: { label: 'more' } }), 403, 'AUTHORISATION_DENIED');
    expectError(await control.request('GET', '/api-keys', { token: created.key }), 403, 'AUTHORISATION_DENIED');
    expectError(await control.request('DELETE', `/api-keys/${created.id}`, { token: created.key }), 403, 'AUTHORISATION_DENIED');
    // The key survived its own attempt to revoke itself.
    expectStatus(await control.request('GET', '/auth/me', { token: created.key }), 200);
  });

  it('revokes a key: 204, then the key gets 401 and a second DELETE 404', async () => {
    const { token } = await control.signUp();
    const created = await createKey(token);
    const kept = await createKey(token, 'kept');
    expectStatus(await control.request('GET', '/agents', { token: created.key }), 200);

    const revoked = await control.request('DELETE', `/api-keys/${created.id}`, { token });
    assert.equal(revoked.status, 204);
    assert.equal(revoked.body, undefined);
    expectError(await control.request('GET', '/agents', { token: created.key }), 401, 'AUTHENTICATION_FAILED');
    expectError(await control.request('DELETE', `/api-keys/${created.id}`, { token }), 404, 'NOT_FOUND');

    const listed = await control.request('GET', '/api-keys', { token });
    assert.deepEqual(listed.body.api_keys.map((k: any) => k.id), [kept.id]);
    expectStatus(await control.request('GET', '/agents', { token: kept.key }), 200);
  });

  it('answers another user\'s key as 404 and leaves it working', async () => {
    const owner = await control.signUp();
    const created = await createKey(owner.token);
    const stranger = await control.signUp();
    expectError(await control.request('DELETE', `/api-keys/${created.id}`, { token: stranger.token }), 404, 'NOT_FOUND');
    expectError(await control.request('DELETE', '/api-keys/pkey_doesnotexist', { token: owner.token }), 404, 'NOT_FOUND');
    expectStatus(await control.request('GET', '/auth/me', { token: created.key }), 200);
  });

  it('validates the label: missing, empty or unknown fields are 422', async () => {
    const { token } = await control.signUp();
    expectError(await control.request('POST', '/api-keys', { token, body: {} }), 422, 'VALIDATION_ERROR', ['body', 'label']);
    expectError(await control.request('POST', '/api-keys', { token, body: { label: '' } }), 422, 'VALIDATION_ERROR', ['body', 'label']);
    expectError(await control.request('POST', '/api-keys', { token, body: { label: 'x', scope: 'all' } }), 422, 'VALIDATION_ERROR', ['body', 'scope']);
    expectError(await control.request('POST', '/api-keys', { token, body: { label: 42 } }), 422, 'VALIDATION_ERROR', ['body', 'label']);
  });

  it('lets a viewer\'s API key read but not write', async () => {
    const owner = await control.signUp();
    const agent = await createAgent(control, owner.token);
    const viewer = await signUpMember(control, owner.user.account_id, 'viewer');
    const { key } = await createKey(viewer.token);
    expectStatus(await control.request('GET', `/agents/${agent.id}`, { token: key }), 200);
    expectError(await control.request('POST', '/agents', { token: key, body: { name: 'nope' } }), 403, 'AUTHORISATION_DENIED');
  });

  it('stores personal keys only as SHA-256 hashes', async () => {
    const { token } = await control.signUp();
    const { key } = await createKey(token);
    const stored = await databaseText(control.db);
    assert.ok(!stored.includes(key), 'the agnt_ key is stored in the clear');
    assert.ok(stored.includes(sha256Hex(key)));
  });
});
