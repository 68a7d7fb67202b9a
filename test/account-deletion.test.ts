import assert from 'node:assert/strict';
import { startControl, type TestControl } from './support/control-harness.js';
import { expectError, expectStatus, signUpMember } from './support/control-api.js';
import { denialOf, startTestAuthz, type TestAuthz } from './support/edge-authz.js';
import { createRunningAgent, waitFor } from './support/orch-helpers.js';
import { containersOf } from './support/podman.js';

/**
 * DELETE /account on podman, checked where a user would look: the containers, the edge
 * (authz's Check, as Envoy asks it), signing in, and another account that must not notice.
 */
describe('control API: deleting an account (podman)', function () {
  this.timeout(240_000);
  let control: TestControl;
  let edge: TestAuthz;

  before(async () => {
    control = await startControl({}, { orchestrate: true });
    edge = await startTestAuthz({ redis: control.redis, clock: control.clock, agentDomain: control.config.agentUrl.domain });
  });
  after(async () => {
    await edge?.close();
    await control?.close();
  });

  const hostOf = (agent: { url: string }) => new URL(agent.url).hostname;
  const check = (agent: { url: string }, key: string) => edge.client.check({ host: hostOf(agent), headers: { authorization: `Bearer ${key}` } });
  async function newAccessKey(token: string, agentId: string): Promise<string> {
    const created = await control.request('POST', `/agents/${agentId}/access-keys`, { token, body: { label: 'caller' } });
    expectStatus(created, 201);
    return created.body.key;
  }
  const deleteAccount = (token: string, body?: unknown) => control.request('DELETE', '/account', { token, body });

  it('refuses every role but owner with 403, and a body that does not name the account with 422 at body.confirm', async () => {
    const owner = await control.signUp();
    const accountId = owner.user.account_id;
    for (const role of ['admin', 'member', 'viewer']) {
      const caller = await signUpMember(control, accountId, role);
      expectError(await deleteAccount(caller.token, { confirm: accountId }), 403, 'AUTHORISATION_DENIED');
    }
    expectError(await deleteAccount(owner.token), 422, 'VALIDATION_ERROR', ['body', 'confirm']);
    expectError(await deleteAccount(owner.token, { confirm: 'acc_someone_else' }), 422, 'VALIDATION_ERROR', ['body', 'confirm']);
    expectStatus(await control.request('GET', '/auth/me', { token: owner.token }), 200);
  });

  it('stops its agents, refuses its access keys at the edge at once, removes its users and data, and leaves another account alone', async () => {
    const owner = await control.signUp();
    const member = await signUpMember(control, owner.user.account_id, 'member');
    const apiKey = (await control.request('POST', '/api-keys', { token: owner.token, body: { label: 'ci' } })).body.key as string;
    const doomed = await createRunningAgent(control, owner.token);
    const stranger = await control.signUp();
    const kept = await createRunningAgent(control, stranger.token);
    const doomedKey = await newAccessKey(owner.token, doomed.id);
    const keptKey = await newAccessKey(stranger.token, kept.id);
    assert.equal((await check(doomed.agent, doomedKey)).http_response, 'ok_response');
    assert.ok(containersOf(doomed.id).length > 0);

    expectStatus(await deleteAccount(owner.token, { confirm: owner.user.account_id }), 204);

    // The edge refuses the key from the first request after the answer: the route is gone.
    assert.equal(denialOf(await check(doomed.agent, doomedKey)).httpStatus, 'NotFound');
    for (const token of [owner.token, member.token, apiKey]) expectError(await control.request('GET', '/auth/me', { token }), 401, 'AUTHENTICATION_FAILED');
    for (const who of [owner, member]) {
      expectError(await control.request('POST', '/auth/login', { body: { email: who.user.email, password: who.password } }), 401, 'AUTHENTICATION_FAILED');
    }
    await waitFor(`the containers of ${doomed.id} to be removed`, async () => (containersOf(doomed.id).length === 0 ? true : undefined), 60_000);
    for (const table of ['accounts', 'users', 'agents', 'deployments', 'replica_intervals', 'request_counts', 'invites']) {
      const column = table === 'accounts' ? 'id' : 'account_id';
      assert.equal((await control.db(table).where({ [column]: owner.user.account_id })).length, 0, `${table} still holds rows of the account`);
    }
    assert.equal((await control.db('access_keys').where({ agent_id: doomed.id })).length, 0);

    // The other account: its agent runs, its key passes, its owner is signed in.
    assert.equal((await check(kept.agent, keptKey)).http_response, 'ok_response');
    const still = await control.request('GET', `/agents/${kept.id}`, { token: stranger.token });
    expectStatus(still, 200);
    assert.equal(still.body.status, 'running');
    assert.ok(containersOf(kept.id).length > 0);
  });

  it('a reconcile after a crash that came before the containers were removed removes them', async () => {
    const owner = await control.signUp();
    const doomed = await createRunningAgent(control, owner.token);
    // As if the control API died right after the commit: the queued removal never runs.
    await control.control.services.runner!.close();
    expectStatus(await deleteAccount(owner.token, { confirm: owner.user.account_id }), 204);
    assert.ok(containersOf(doomed.id).length > 0, 'the queue was closed, so nothing removed the containers yet');
    // The reconciler's pass, as the next start runs it: every job Postgres no longer holds is removed.
    await control.control.loops.reconciler.runOnce();
    await waitFor(`the containers of ${doomed.id} to be removed`, async () => (containersOf(doomed.id).length === 0 ? true : undefined), 60_000);
  });
});
