import assert from 'node:assert/strict';
import { PlatformError } from '../control/domain/errors.js';
import { AdminService } from '../control/services/admin-service.js';
import { startControl, type TestControl } from './support/control-harness.js';
import { expectError, expectStatus, signUpMember } from './support/control-api.js';
import { waitFor } from './support/wait.js';

/** Signing out, listing the account's users and deleting one (issue 18, "Sessions"). */
describe('control API: sign-out and deleting users', () => {
  let control: TestControl;

  before(async () => {
    control = await startControl();
  });
  after(async () => control?.close());

  const me = (token: string) => control.request('GET', '/auth/me', { token });
  const login = (email: string, password: string) => control.request('POST', '/auth/login', { body: { email, password } });
  async function newApiKey(token: string): Promise<string> {
    const created = await control.request('POST', '/api-keys', { token, body: { label: 'ci' } });
    expectStatus(created, 201);
    return created.body.key;
  }

  describe('POST /auth/logout', () => {
    it('ends the presenting session: 204, then that token gets 401 while another session of the user still works', async () => {
      const { token, user, password } = await control.signUp();
      const other = await login(user.email, password);
      expectStatus(other, 200);

      expectStatus(await control.request('POST', '/auth/logout', { token }), 204);
      expectError(await me(token), 401, 'AUTHENTICATION_FAILED');
      expectError(await control.request('POST', '/auth/logout', { token }), 401, 'AUTHENTICATION_FAILED');
      expectStatus(await me(other.body.token), 200);
    });

    it('refuses a personal API key with 403 AUTHORISATION_DENIED, as /api-keys does, and the key keeps working', async () => {
      const { token } = await control.signUp();
      const apiKey = await newApiKey(token);
      const refused = await control.request('POST', '/auth/logout', { token: apiKey });
      expectError(refused, 403, 'AUTHORISATION_DENIED');
      assert.match(refused.body.message, /DELETE \/api-keys/);
      expectStatus(await me(apiKey), 200);
    });

    it('without a token is 401', async () => {
      expectError(await control.request('POST', '/auth/logout'), 401, 'AUTHENTICATION_FAILED');
    });
  });

  describe('GET /account/users', () => {
    it('lists the users of the caller\'s account only, for owners and admins; members and viewers get 403', async () => {
      const owner = await control.signUp();
      const admin = await signUpMember(control, owner.user.account_id, 'admin');
      const member = await signUpMember(control, owner.user.account_id, 'member');
      const viewer = await signUpMember(control, owner.user.account_id, 'viewer');
      await control.signUp(); // another account's user

      for (const caller of [owner, admin]) {
        const listed = await control.request('GET', '/account/users', { token: caller.token });
        expectStatus(listed, 200);
        assert.deepEqual(listed.body.users.map((u: any) => u.id).sort(), [owner, admin, member, viewer].map((u) => u.user.id).sort());
        assert.ok(listed.body.users.every((u: any) => u.password_hash === undefined));
      }
      for (const caller of [member, viewer]) expectError(await control.request('GET', '/account/users', { token: caller.token }), 403, 'AUTHORISATION_DENIED');
    });
  });

  describe('DELETE /account/users/{id}', () => {
    const remove = (token: string, id: string) => control.request('DELETE', `/account/users/${id}`, { token });

    it('an owner deletes a user: their sessions and personal API keys stop working and they cannot sign in', async () => {
      const owner = await control.signUp();
      const member = await signUpMember(control, owner.user.account_id, 'member');
      const memberKey = await newApiKey(member.token);
      expectStatus(await me(memberKey), 200);

      expectStatus(await remove(owner.token, member.user.id), 204);
      expectError(await me(member.token), 401, 'AUTHENTICATION_FAILED');
      expectError(await me(memberKey), 401, 'AUTHENTICATION_FAILED');
      expectError(await login(member.user.email, member.password), 401, 'AUTHENTICATION_FAILED');
      const listed = await control.request('GET', '/account/users', { token: owner.token });
      assert.deepEqual(listed.body.users.map((u: any) => u.id), [owner.user.id]);
      expectError(await remove(owner.token, member.user.id), 404, 'NOT_FOUND');
    });

    it('refuses every role but owner with 403, and deletes nobody', async () => {
      const owner = await control.signUp();
      const target = await signUpMember(control, owner.user.account_id, 'member');
      for (const role of ['admin', 'member', 'viewer']) {
        const caller = await signUpMember(control, owner.user.account_id, role);
        expectError(await remove(caller.token, target.user.id), 403, 'AUTHORISATION_DENIED');
      }
      expectStatus(await me(target.token), 200);
    });

    it('answers a user of another account as 404, and leaves them alone', async () => {
      const owner = await control.signUp();
      const stranger = await control.signUp();
      expectError(await remove(owner.token, stranger.user.id), 404, 'NOT_FOUND');
      expectStatus(await me(stranger.token), 200);
    });

    it('refuses to delete the last owner with 409 LAST_OWNER; with a second owner, an owner may delete themselves', async () => {
      const owner = await control.signUp();
      const refused = await remove(owner.token, owner.user.id);
      expectError(refused, 409, 'LAST_OWNER');
      expectStatus(await me(owner.token), 200);

      const second = await signUpMember(control, owner.user.account_id, 'owner');
      expectStatus(await remove(owner.token, owner.user.id), 204);
      expectError(await me(owner.token), 401, 'AUTHENTICATION_FAILED');
      expectError(await remove(second.token, second.user.id), 409, 'LAST_OWNER');
    });

    it('a sign-in racing the deletion of its user gets 401, not a server error', async () => {
      const owner = await control.signUp();
      const member = await signUpMember(control, owner.user.account_id, 'member');
      // The deletion holds the user's row, uncommitted: the sign-in reads the user, checks the
      // password, and its session insert waits on the row; only then does the deletion commit.
      const deletion = await control.db.transaction();
      try {
        await deletion('users').where({ id: member.user.id }).delete();
        const signingIn = login(member.user.email, member.password);
        await waitFor('the session insert to wait on the deleted user', async () => {
          const waiting = await control.db.raw(
            "SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query ILIKE 'insert into \"sessions\"%'",
          );
          return waiting.rows.length > 0 ? true : undefined;
        }, 10_000, 20);
        await deletion.commit();
        expectError(await signingIn, 401, 'AUTHENTICATION_FAILED');
      } finally {
        if (!deletion.isCompleted()) await deletion.rollback();
      }
    });
  });

  describe('expired sessions', () => {
    it('are removed by the housekeeping pass, and a live session stays', async () => {
      const sessionsOf = async (userId: string) => Number((await control.db('sessions').where({ user_id: userId }).count({ n: '*' }).first())!.n);
      const expiring = await control.signUp();
      control.clock.advance(control.config.sessionTtlMinutes * 60_000 + 1_000);
      const live = await control.signUp();
      expectError(await me(expiring.token), 401, 'AUTHENTICATION_FAILED');
      assert.equal(await sessionsOf(expiring.user.id), 1, 'an expired row is refused but still there before the pass');

      await control.control.loops.housekeeping.runOnce();
      assert.equal(await sessionsOf(expiring.user.id), 0);
      assert.equal(await sessionsOf(live.user.id), 1);
      expectStatus(await me(live.token), 200);
    });
  });

  describe('npm run admin -- user delete <email>', () => {
    it('deletes the user (their tokens stop working) by the same rule: never the last owner', async () => {
      const admin = new AdminService(control.db, control.clock);
      const owner = await control.signUp();
      const member = await signUpMember(control, owner.user.account_id, 'member');
      await admin.deleteUser(member.user.email.toUpperCase());
      expectError(await me(member.token), 401, 'AUTHENTICATION_FAILED');
      await assert.rejects(admin.deleteUser(owner.user.email), (error: unknown) => error instanceof PlatformError && error.code === 'LAST_OWNER');
      await assert.rejects(admin.deleteUser('nobody@example.com'), (error: unknown) => error instanceof PlatformError && error.code === 'NOT_FOUND');
      expectStatus(await me(owner.token), 200);
    });
  });
});
