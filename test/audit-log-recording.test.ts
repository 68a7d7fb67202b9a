import assert from 'node:assert/strict';
import { startControl, type TestControl } from './support/control-harness.js';
import { createAgent, expectError, expectStatus, signUpMember } from './support/control-api.js';
import { auditEvents, eventsOfResponse, expectOneEvent, userActor } from './support/audit.js';

/**
 * Issue 20, "Audit log": each state-changing call over HTTP leaves exactly one event with
 * the actor, the target, the X-Request-Id of its response and the caller's address.
 */
describe('audit log: what each change over the API records', () => {
  let control: TestControl;

  before(async () => {
    control = await startControl();
  });
  after(async () => control?.close());

  describe('agents', () => {
    it('records agent.create, update, deploy, scale, rollback and delete, one event each, by the session user', async () => {
      const { token, user } = await control.signUp();
      const actor = userActor(user);
      const onAgent = (id: string) => ({ type: 'agent', id });

      const created = await control.request('POST', '/agents', { token, body: { name: 'audited', deploy: { replicas: 1 } } });
      expectStatus(created, 201);
      const agentId = created.body.id;
      const createEvent = await expectOneEvent(control, token, created, { action: 'agent.create', actor, target: onAgent(agentId) });
      assert.deepEqual(createEvent.details, { name: 'audited', access: 'private', deployed: true });

      const patched = await control.request('PATCH', `/agents/${agentId}`, { token, body: { access: 'public' } });
      expectStatus(patched, 200);
      const updateEvent = await expectOneEvent(control, token, patched, { action: 'agent.update', actor, target: onAgent(agentId) });
      assert.deepEqual(updateEvent.details, { changed: ['access'], access_from: 'private', access_to: 'public' });

      const deployed = await control.request('POST', `/agents/${agentId}/deploy`, { token, body: { port: 8081, env: [{ key: 'MODE', value: 'x' }] } });
      expectStatus(deployed, 202);
      const deployEvent = await expectOneEvent(control, token, deployed, { action: 'agent.deploy', actor, target: onAgent(agentId) });
      assert.deepEqual(deployEvent.details.changed, ['env.MODE', 'port']);

      const scaled = await control.request('POST', `/agents/${agentId}/scale`, { token, body: { direction: 'up', count: 1 } });
      expectStatus(scaled, 200);
      const scaleEvent = await expectOneEvent(control, token, scaled, { action: 'agent.scale', actor, target: onAgent(agentId) });
      assert.deepEqual(scaleEvent.details, { replicas_from: 1, replicas_to: 2 });

      const first = (await control.request('GET', `/agents/${agentId}/deployments?page_size=100`, { token })).body.deployments.at(-1);
      const rolledBack = await control.request('POST', `/agents/${agentId}/rollback`, { token, body: { deployment_id: first.id } });
      expectStatus(rolledBack, 202);
      const rollbackEvent = await expectOneEvent(control, token, rolledBack, { action: 'agent.rollback', actor, target: onAgent(agentId) });
      assert.equal(rollbackEvent.details.deployment_id, first.id);

      const deleted = await control.request('DELETE', `/agents/${agentId}`, { token });
      expectStatus(deleted, 204);
      await expectOneEvent(control, token, deleted, { action: 'agent.delete', actor, target: onAgent(agentId) });

      // The agent is gone; its history is not: all six stay findable by its id, newest first.
      const history = await auditEvents(control, token, `agent_id=${agentId}`);
      assert.deepEqual(history.map((event) => event.action), ['agent.delete', 'agent.rollback', 'agent.scale', 'agent.deploy', 'agent.update', 'agent.create']);
    });

    it('names a personal API key as the actor of what is done with it, with its user\'s email', async () => {
      const { token, user } = await control.signUp();
      const key = await control.request('POST', '/api-keys', { token, body: { label: 'ci' } });
      expectStatus(key, 201);
      const created = await control.request('POST', '/agents', { token: key.body.key, body: { name: 'by a script' } });
      expectStatus(created, 201);
      await expectOneEvent(control, token, created, {
        action: 'agent.create',
        actor: { type: 'api_key', id: key.body.id, email: user.email },
        target: { type: 'agent', id: created.body.id },
      });
      // actor_id with the user's id finds what they did through their keys too.
      const byUser = await auditEvents(control, token, `actor_id=${user.id}&action=agent.create`);
      assert.deepEqual(byUser.map((event) => event.target.id), [created.body.id]);
    });
  });

  describe('keys', () => {
    it('records access_key.create and revoke against the key, carrying the agent for the agent_id filter', async () => {
      const { token, user } = await control.signUp();
      const agent = await createAgent(control, token, { access: 'public' });
      const created = await control.request('POST', `/agents/${agent.id}/access-keys`, { token, body: { label: 'partner' } });
      expectStatus(created, 201);
      const target = { type: 'access_key', id: created.body.id };
      const event = await expectOneEvent(control, token, created, { action: 'access_key.create', actor: userActor(user), target });
      assert.deepEqual(event.details, { label: 'partner' });

      const revoked = await control.request('DELETE', `/agents/${agent.id}/access-keys/${created.body.id}`, { token });
      expectStatus(revoked, 204);
      await expectOneEvent(control, token, revoked, { action: 'access_key.revoke', actor: userActor(user), target });

      const aboutAgent = await auditEvents(control, token, `agent_id=${agent.id}`);
      assert.deepEqual(aboutAgent.map((e) => e.action), ['access_key.revoke', 'access_key.create', 'agent.create']);
    });

    it('records api_key.create and revoke', async () => {
      const { token, user } = await control.signUp();
      const created = await control.request('POST', '/api-keys', { token, body: { label: 'laptop' } });
      expectStatus(created, 201);
      const target = { type: 'api_key', id: created.body.id };
      await expectOneEvent(control, token, created, { action: 'api_key.create', actor: userActor(user), target });
      const revoked = await control.request('DELETE', `/api-keys/${created.body.id}`, { token });
      expectStatus(revoked, 204);
      await expectOneEvent(control, token, revoked, { action: 'api_key.revoke', actor: userActor(user), target });
    });
  });

  describe('sign-in', () => {
    it('records auth.login, auth.login_failed (a known user, wrong password) and auth.logout by that user', async () => {
      const { token, user, password } = await control.signUp();
      const actor = userActor(user);
      const target = { type: 'user', id: user.id };

      const failed = await control.request('POST', '/auth/login', { body: { email: user.email, password: 'not the password' } });
      expectError(failed, 401, 'AUTHENTICATION_FAILED');
      await expectOneEvent(control, token, failed, { action: 'auth.login_failed', actor, target });

      const login = await control.request('POST', '/auth/login', { body: { email: user.email, password } });
      expectStatus(login, 200);
      await expectOneEvent(control, token, login, { action: 'auth.login', actor, target });

      const logout = await control.request('POST', '/auth/logout', { token: login.body.token });
      expectStatus(logout, 204);
      await expectOneEvent(control, token, logout, { action: 'auth.logout', actor, target });
    });

    it('records nothing for an unknown email: it belongs to no account', async () => {
      const count = async () => Number((await control.db('audit_events').count({ n: '*' }))[0]!.n);
      const before = await count();
      const refused = await control.request('POST', '/auth/login', { body: { email: 'nobody-here@example.com', password: 'whatever it is' } });
      expectError(refused, 401, 'AUTHENTICATION_FAILED');
      assert.equal(await count(), before);
      assert.equal(await control.db('audit_events').whereRaw("actor_email = 'nobody-here@example.com'").first(), undefined);
    });
  });

  describe('users', () => {
    it('records user.remove by the owner, naming the removed user (deleted with it: they belonged to no other account)', async () => {
      const owner = await control.signUp();
      const member = await signUpMember(control, owner.user.account_id, 'member');
      const deleted = await control.request('DELETE', `/account/users/${member.user.id}`, { token: owner.token });
      expectStatus(deleted, 204);
      const event = await expectOneEvent(control, owner.token, deleted, { action: 'user.remove', actor: userActor(owner.user), target: { type: 'user', id: member.user.id } });
      assert.deepEqual(event.details, { email: member.user.email, role: 'member', user_deleted: true });
    });
  });

  describe('a change that fails', () => {
    it('records nothing for a 422, a 403 quota refusal, a 412 or a 404', async () => {
      const { token } = await control.signUp();
      const agent = await createAgent(control, token, { deploy: { replicas: 1, max_replicas: 10 } });
      const before = await auditEvents(control, token);
      const failures = [
        await control.request('POST', `/agents/${agent.id}/scale`, { token, body: { direction: 'down', count: 5 } }),
        // Within max_replicas, past the free plan's replicas.
        await control.request('POST', `/agents/${agent.id}/scale`, { token, body: { direction: 'up', count: 5 } }),
        await control.request('POST', `/agents/${agent.id}/deploy`, { token, body: { port: 9000 }, headers: { 'If-Match': '"999"' } }),
        await control.request('DELETE', `/agents/${agent.id}/access-keys/akey_none`, { token }),
        await control.request('POST', '/agents', { token, body: { name: '' } }),
      ];
      assert.deepEqual(failures.map((response) => response.status), [422, 403, 412, 404, 422]);
      for (const failure of failures) assert.deepEqual(await eventsOfResponse(control, token, failure), []);
      assert.deepEqual(await auditEvents(control, token), before);
    });

    it('leaves no event when the transaction fails after the event was written, and the change is undone with it', async () => {
      const { token, user } = await control.signUp();
      // A deferred constraint trigger fails this account's transactions at COMMIT, after every
      // statement of them ran, the audit insert included: the event and the change go together.
      await control.db.raw(`CREATE FUNCTION refuse_commit() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'refused at commit'; END $$`);
      await control.db.raw(
        `CREATE CONSTRAINT TRIGGER refuse_commit AFTER INSERT ON audit_events DEFERRABLE INITIALLY DEFERRED FOR EACH ROW WHEN (NEW.account_id = '${user.account_id}') EXECUTE FUNCTION refuse_commit()`,
      );
      try {
        const refused = await control.request('POST', '/agents', { token, body: { name: 'never committed' } });
        expectError(refused, 500, 'INTERNAL_ERROR');
      } finally {
        await control.db.raw('DROP TRIGGER refuse_commit ON audit_events');
        await control.db.raw('DROP FUNCTION refuse_commit()');
      }
      assert.deepEqual(await auditEvents(control, token), []);
      assert.equal((await control.request('GET', '/agents', { token })).body.total, 0, 'the agent is not there either');
    });
  });
});
