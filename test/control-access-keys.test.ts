import assert from 'node:assert/strict';
import { sha256Hex } from '../control/crypto/tokens.js';
import { startControl, type TestControl } from './support/control-harness.js';
import { createAgent, databaseText, expectError, expectStatus, signUpMember } from './support/control-api.js';

describe('control API: access keys of an agent', () => {
  let control: TestControl;

  before(async () => {
    control = await startControl();
  });
  after(async () => control?.close());

  const keysPath = (agentId: string) => `/agents/${agentId}/access-keys`;
  const listKeys = async (token: string, agentId: string) => {
    const response = await control.request('GET', keysPath(agentId), { token });
    expectStatus(response, 200);
    return response.body.access_keys as any[];
  };
  async function createKey(token: string, agentId: string, label: string) {
    const response = await control.request('POST', keysPath(agentId), { token, body: { label } });
    expectStatus(response, 201);
    return response.body;
  }

  it('creates a key: 201 {id, label, key_preview, created_at, key}', async () => {
    const { token } = await control.signUp();
    const agent = await createAgent(control, token);
    const key = await createKey(token, agent.id, 'mobile app');
    assert.deepEqual(Object.keys(key).sort(), ['created_at', 'id', 'key', 'key_preview', 'label']);
    assert.equal(key.label, 'mobile app');
    assert.match(key.key, /^agk_[0-9A-Za-z]+$/);
    assert.notEqual(key.key, agent.access_key);
    assert.equal(key.key_preview, `${key.key.slice(0, 'agk_'.length + 4)}…`);
    assert.ok(key.key_preview.startsWith('agk_') && key.key_preview.endsWith('…'));
    assert.equal(key.created_at, control.clock.now().toISOString());
  });

  it('lists the agent\'s keys without the secrets, the first one labelled default', async () => {
    const { token } = await control.signUp();
    const agent = await createAgent(control, token);
    control.clock.advance(1000);
    const second = await createKey(token, agent.id, 'second');
    const other = await createAgent(control, token, { name: 'other' });

    const keys = await listKeys(token, agent.id);
    assert.equal(keys.length, 2);
    assert.deepEqual(keys.map((k) => k.label).sort(), ['default', 'second']);
    for (const key of keys) {
      assert.deepEqual(Object.keys(key).sort(), ['created_at', 'id', 'key_preview', 'label']);
    }
    const text = JSON.stringify(keys);
    assert.ok(!text.includes(second.key) && !text.includes(agent.access_key), 'a listing shows a secret');
    assert.deepEqual((await listKeys(token, other.id)).map((k) => k.label), ['default']);
  });

  it('gives a public agent keys on request', async () => {
    const { token } = await control.signUp();
    const agent = await createAgent(control, token, { access: 'public' });
    assert.deepEqual(await listKeys(token, agent.id), []);
    await createKey(token, agent.id, 'ready for private');
    assert.equal((await listKeys(token, agent.id)).length, 1);
  });

  it('revokes a key: 204, gone from the listing, a second DELETE 404', async () => {
    const { token } = await control.signUp();
    const agent = await createAgent(control, token);
    const key = await createKey(token, agent.id, 'to revoke');
    const revoked = await control.request('DELETE', `${keysPath(agent.id)}/${key.id}`, { token });
    assert.equal(revoked.status, 204);
    assert.equal(revoked.body, undefined);
    assert.deepEqual((await listKeys(token, agent.id)).map((k) => k.label), ['default']);
    expectError(await control.request('DELETE', `${keysPath(agent.id)}/${key.id}`, { token }), 404, 'NOT_FOUND');
    assert.deepEqual(await control.db('access_keys').where({ key_hash: sha256Hex(key.key) }), []);
  });

  it('can revoke every key, the default one included', async () => {
    const { token } = await control.signUp();
    const agent = await createAgent(control, token);
    const [first] = await listKeys(token, agent.id);
    assert.equal((await control.request('DELETE', `${keysPath(agent.id)}/${first.id}`, { token })).status, 204);
    assert.deepEqual(await listKeys(token, agent.id), []);
    const fetched = await control.request('GET', `/agents/${agent.id}`, { token });
    assert.equal(fetched.body.access, 'private');
  });

  it('answers a key of another agent as 404, even in the same account', async () => {
    const { token } = await control.signUp();
    const a = await createAgent(control, token, { name: 'a' });
    const b = await createAgent(control, token, { name: 'b' });
    const [keyOfA] = await listKeys(token, a.id);
    expectError(await control.request('DELETE', `${keysPath(b.id)}/${keyOfA.id}`, { token }), 404, 'NOT_FOUND');
    assert.equal((await listKeys(token, a.id)).length, 1);
  });

  it('answers another account\'s agent and keys with 404, and leaves them alone', async () => {
    const owner = await control.signUp();
    const agent = await createAgent(control, owner.token);
    const [key] = await listKeys(owner.token, agent.id);
    const stranger = await control.signUp();
    const own = await createAgent(control, stranger.token);

    expectError(await control.request('GET', keysPath(agent.id), { token: stranger.token }), 404, 'NOT_FOUND');
    expectError(await control.request('POST', keysPath(agent.id), { token: stranger.token, body: { label: 'x' } }), 404, 'NOT_FOUND');
    expectError(await control.request('DELETE', `${keysPath(agent.id)}/${key.id}`, { token: stranger.token }), 404, 'NOT_FOUND');
    // Nor through an agent of the stranger's own.
    expectError(await control.request('DELETE', `${keysPath(own.id)}/${key.id}`, { token: stranger.token }), 404, 'NOT_FOUND');
    assert.equal((await listKeys(owner.token, agent.id)).length, 1);
  });

  it('answers an unknown agent with 404', async () => {
    const { token } = await control.signUp();
    expectError(await control.request('GET', keysPath('agt_doesnotexist'), { token }), 404, 'NOT_FOUND');
    expectError(await control.request('POST', keysPath('agt_doesnotexist'), { token, body: { label: 'x' } }), 404, 'NOT_FOUND');
    expectError(await control.request('DELETE', `${keysPath('agt_doesnotexist')}/akey_x`, { token }), 404, 'NOT_FOUND');
  });

  it('validates the label', async () => {
    const { token } = await control.signUp();
    const agent = await createAgent(control, token);
    const post = (body: unknown) => control.request('POST', keysPath(agent.id), { token, body });
    expectError(await post({}), 422, 'VALIDATION_ERROR', ['body', 'label']);
    expectError(await post({ label: '' }), 422, 'VALIDATION_ERROR', ['body', 'label']);
    expectError(await post({ label: 'l'.repeat(129) }), 422, 'VALIDATION_ERROR', ['body', 'label']);
    expectError(await post({ label: 'ok', expires: 'never' }), 422, 'VALIDATION_ERROR', ['body', 'expires']);
    expectStatus(await post({ label: 'l'.repeat(128) }), 201);
  });

  it('lets a viewer list keys but not create or revoke them', async () => {
    const owner = await control.signUp();
    const agent = await createAgent(control, owner.token);
    const [key] = await listKeys(owner.token, agent.id);
    const viewer = await signUpMember(control, owner.user.account_id, 'viewer');
    assert.equal((await listKeys(viewer.token, agent.id)).length, 1);
    expectError(await control.request('POST', keysPath(agent.id), { token: viewer.token, body: { label: 'x' } }), 403, 'AUTHORISATION_DENIED');
    expectError(await control.request('DELETE', `${keysPath(agent.id)}/${key.id}`, { token: viewer.token }), 403, 'AUTHORISATION_DENIED');
    assert.equal((await listKeys(owner.token, agent.id)).length, 1);
  });

  it('manages keys with a personal API key too', async () => {
    const { token } = await control.signUp();
    const apiKey = (await control.request('POST', '/api-keys', { token, body: { label: 'ci' } })).body.key;
    const agent = await createAgent(control, apiKey);
    const key = await createKey(apiKey, agent.id, 'from ci');
    assert.equal((await listKeys(apiKey, agent.id)).length, 2);
    assert.equal((await control.request('DELETE', `${keysPath(agent.id)}/${key.id}`, { token: apiKey })).status, 204);
  });

  it('stores access keys only as SHA-256 hashes', async () => {
    const { token } = await control.signUp();
    const agent = await createAgent(control, token);
    const key = await createKey(token, agent.id, 'hashed');
    const stored = await databaseText(control.db);
    for (const secret of [agent.access_key, key.key]) {
      assert.ok(!stored.includes(secret), 'an agk_ key is stored in the clear');
      assert.ok(stored.includes(sha256Hex(secret)));
    }
  });
});
