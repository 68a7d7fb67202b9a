import assert from 'node:assert/strict';
import { startControl, type TestControl } from './support/control-harness.js';
import { expectStatus } from './support/control-api.js';

/** Issue 20: an audit event's details are small and never hold a secret. */
describe('audit log: no secret in any event', () => {
  let control: TestControl;

  before(async () => {
    control = await startControl();
  });
  after(async () => control?.close());

  it('stores no model key, env value, access key, API key, session token or password, whatever the changes were', async () => {
    const { token, user, password } = await control.signUp({ password: 'audit-password-kept-out' });
    const secrets: string[] = [password, 'sk-ant-audit-model-key-0123456789', 'env-secret-value-first', 'env-plain-value-first', 'env-secret-value-second', 'wrong-password-typed'];
    const call = async (method: string, path: string, body?: unknown, status = 200, caller = token) => {
      const response = await control.request(method, path, { token: caller, body });
      expectStatus(response, status);
      return response.body;
    };

    const agent = await call('POST', '/agents', {
      name: 'with secrets',
      api_key: secrets[1],
      system_prompt: 'a prompt',
      deploy: { replicas: 1, env: [{ key: 'TOKEN', value: secrets[2], secret: true }, { key: 'MODE', value: secrets[3] }] },
    }, 201);
    secrets.push(agent.access_key);
    await call('POST', `/agents/${agent.id}/deploy`, { env: [{ key: 'TOKEN', value: secrets[4], secret: true }] }, 202);
    const accessKey = await call('POST', `/agents/${agent.id}/access-keys`, { label: 'rotated' }, 201);
    secrets.push(accessKey.key);
    await call('DELETE', `/agents/${agent.id}/access-keys/${accessKey.id}`, undefined, 204);
    const apiKey = await call('POST', '/api-keys', { label: 'ci' }, 201);
    secrets.push(apiKey.key);
    await call('DELETE', `/api-keys/${apiKey.id}`, undefined, 204);
    const session = await control.request('POST', '/auth/login', { body: { email: user.email, password } });
    expectStatus(session, 200);
    secrets.push(session.body.token, token);
    await control.request('POST', '/auth/login', { body: { email: user.email, password: secrets[5] } });
    await call('POST', '/auth/logout', undefined, 204, session.body.token);

    const rows = await control.db('audit_events').where({ account_id: user.account_id }).select('*');
    assert.deepEqual(new Set(rows.map((row) => row.action)), new Set([
      'agent.create', 'agent.deploy', 'access_key.create', 'access_key.revoke', 'api_key.create', 'api_key.revoke', 'auth.login', 'auth.login_failed', 'auth.logout',
    ]));
    const stored = JSON.stringify(rows);
    for (const secret of secrets) assert.ok(!stored.includes(secret), `the audit log holds a secret: ${secret}`);
    // What a deploy changed is named, never valued.
    const deploy = rows.find((row) => row.action === 'agent.deploy');
    assert.deepEqual(deploy.details.changed, ['env.TOKEN']);
  });
});
