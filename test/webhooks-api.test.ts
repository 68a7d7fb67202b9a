import assert from 'node:assert/strict';
import { startControl, type TestControl } from './support/control-harness.js';
import { databaseText, expectError, expectStatus, signUpMember } from './support/control-api.js';

/** The webhook endpoints on real Postgres: who may use them, what they accept and show. */
describe('webhooks: the API', () => {
  let control: TestControl;

  before(async () => {
    control = await startControl();
  });
  after(async () => control?.close());

  const create = (token: string, body: Record<string, unknown>) => control.request('POST', '/account/webhooks', { token, body });
  const valid = { url: 'https://hooks.example.com/platform', events: ['agent.deployed', 'agent.crashed'], description: 'CI' };

  it('creates a webhook and shows its whsec_ secret once: the listing and the database never hold it in the clear', async () => {
    const { token } = await control.signUp();
    const created = await create(token, valid);
    expectStatus(created, 201);
    assert.deepEqual(Object.keys(created.body).sort(), ['created_at', 'description', 'events', 'id', 'secret', 'url']);
    assert.match(created.body.id, /^whk_[0-9A-Za-z]{20}$/);
    assert.equal(created.body.url, valid.url);
    assert.deepEqual(created.body.events, valid.events);
    assert.equal(created.body.description, 'CI');
    // Standard Webhooks: whsec_ and the base64 of the key's bytes (24 to 64 of them).
    assert.match(created.body.secret, /^whsec_[A-Za-z0-9+/]+=*$/);
    assert.equal(Buffer.from(created.body.secret.slice('whsec_'.length), 'base64').length, 32);

    const listed = await control.request('GET', '/account/webhooks', { token });
    expectStatus(listed, 200);
    const { secret, ...shown } = created.body;
    assert.deepEqual(listed.body, { webhooks: [shown], total: 1, page: 1, page_size: 20, has_next: false });
    assert.ok(!(await databaseText(control.db)).includes(secret.slice('whsec_'.length)), 'the secret is stored sealed');
  });

  it('lists newest first, page by page', async () => {
    const { token } = await control.signUp();
    const ids: string[] = [];
    for (let i = 0; i < 3; i += 1) {
      control.clock.advance(1000);
      ids.push((await create(token, { ...valid, description: `hook ${i}` })).body.id);
    }
    const first = await control.request('GET', '/account/webhooks?page_size=2', { token });
    expectStatus(first, 200);
    assert.deepEqual(first.body.webhooks.map((w: any) => w.id), [ids[2], ids[1]]);
    assert.equal(first.body.has_next, true);
    const second = await control.request('GET', '/account/webhooks?page_size=2&page=2', { token });
    assert.deepEqual(second.body.webhooks.map((w: any) => w.id), [ids[0]]);
    assert.equal(second.body.total, 3);
  });

  it('deletes a webhook (404 after), and another account cannot see or delete it', async () => {
    const { token } = await control.signUp();
    const { token: stranger } = await control.signUp();
    const { id } = (await create(token, valid)).body;
    expectError(await control.request('DELETE', `/account/webhooks/${id}`, { token: stranger }), 404, 'NOT_FOUND');
    expectError(await control.request('GET', `/account/webhooks/${id}/deliveries`, { token: stranger }), 404, 'NOT_FOUND');
    expectStatus(await control.request('GET', `/account/webhooks/${id}/deliveries`, { token }), 200);
    expectStatus(await control.request('DELETE', `/account/webhooks/${id}`, { token }), 204);
    expectError(await control.request('DELETE', `/account/webhooks/${id}`, { token }), 404, 'NOT_FOUND');
    assert.deepEqual((await control.request('GET', '/account/webhooks', { token })).body.webhooks, []);
  });

  it('lets owners and admins manage webhooks and refuses members and viewers (403 AUTHORISATION_DENIED)', async () => {
    const { token: owner, user } = await control.signUp();
    const { token: admin } = await signUpMember(control, user.account_id, 'admin');
    const made = await create(admin, valid);
    expectStatus(made, 201);
    for (const role of ['member', 'viewer']) {
      const { token } = await signUpMember(control, user.account_id, role);
      expectError(await create(token, valid), 403, 'AUTHORISATION_DENIED');
      expectError(await control.request('GET', '/account/webhooks', { token }), 403, 'AUTHORISATION_DENIED');
      expectError(await control.request('GET', `/account/webhooks/${made.body.id}/deliveries`, { token }), 403, 'AUTHORISATION_DENIED');
      expectError(await control.request('DELETE', `/account/webhooks/${made.body.id}`, { token }), 403, 'AUTHORISATION_DENIED');
    }
    expectStatus(await control.request('DELETE', `/account/webhooks/${made.body.id}`, { token: owner }), 204);
  });

  it('refuses URLs that are not http(s), carry a user or password, or are too long, and events outside the list (422)', async () => {
    const { token } = await control.signUp();
    const refusedUrls = ['ftp://hooks.example.com/x', 'file:///etc/passwd', 'javascript:alert(1)', 'hooks.example.com/x', 'https://user:pass@hooks.example.com/x', 'https://token@hooks.example.com/x', `https://hooks.example.com/${'a'.repeat(2048)}`];
    for (const url of refusedUrls) expectError(await create(token, { ...valid, url }), 422, 'VALIDATION_ERROR', ['body', 'url']);
    expectError(await create(token, { ...valid, events: [] }), 422, 'VALIDATION_ERROR', ['body', 'events']);
    expectError(await create(token, { ...valid, events: ['agent.created'] }), 422, 'VALIDATION_ERROR', ['body', 'events', 0]);
    expectError(await create(token, { ...valid, events: ['agent.deployed', 'agent.deployed'] }), 422, 'VALIDATION_ERROR', ['body', 'events']);
    expectError(await create(token, { url: valid.url }), 422, 'VALIDATION_ERROR', ['body', 'events']);
    assert.equal((await control.request('GET', '/account/webhooks', { token })).body.total, 0);
  });

  it('records webhook.create and webhook.delete in the audit log with the request id', async () => {
    const { token } = await control.signUp();
    const created = await create(token, valid);
    const deleted = await control.request('DELETE', `/account/webhooks/${created.body.id}`, { token });
    const events = await control.db('audit_events').where({ target_id: created.body.id }).orderBy('at').select('action', 'request_id', 'target_type');
    assert.deepEqual(events, [
      { action: 'webhook.create', request_id: created.headers.get('x-request-id'), target_type: 'webhook' },
      { action: 'webhook.delete', request_id: deleted.headers.get('x-request-id'), target_type: 'webhook' },
    ]);
  });
});
