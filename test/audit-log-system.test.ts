import assert from 'node:assert/strict';
import type { BillingProvider } from '../control/billing/provider.js';
import { AdminService } from '../control/services/admin-service.js';
import { startControl, type TestControl } from './support/control-harness.js';
import { createAgent, expectStatus, signUpMember } from './support/control-api.js';
import { auditEvents, expectOneEvent, SYSTEM_ACTOR, userActor } from './support/audit.js';

/** A provider that has every account as a customer and accepts every plan. */
const acceptingBilling: BillingProvider = {
  name: 'fake',
  customerFor: async (accountId) => ({ id: `cus_${accountId}` }),
  subscribe: async () => undefined,
};

/**
 * Issue 20: what the platform does by itself (the autoscaler, the admin command) is
 * recorded with the `system` actor, no request id and no address; a plan change made
 * through the API names its owner.
 */
describe('audit log: the system actor and plan changes', () => {
  let control: TestControl;
  let admin: AdminService;

  before(async () => {
    control = await startControl({}, { billing: acceptingBilling });
    admin = new AdminService(control.db, control.clock, control.control.services.edge);
  });
  after(async () => control?.close());

  /** The single event of `action` in the account, asserting there is exactly one. */
  const onlyEvent = async (token: string, action: string) => {
    const events = await auditEvents(control, token, `action=${action}`);
    assert.equal(events.length, 1, JSON.stringify(events));
    return events[0];
  };

  it('records a scale the autoscaler makes as agent.scale by the system', async () => {
    const { token } = await control.signUp();
    const agent = await createAgent(control, token, { deploy: { replicas: 1, auto_scale: true, min_replicas: 1, max_replicas: 3 } });
    const outcome = await control.control.services.platformScaling.autoscale(agent.id, 1, 2);
    assert.deepEqual(outcome, { changed: true, previous: 1, current: 2, limitedBy: undefined });
    const event = await onlyEvent(token, 'agent.scale');
    assert.deepEqual(
      { actor: event.actor, target: event.target, request_id: event.request_id, ip: event.ip, details: event.details },
      { actor: SYSTEM_ACTOR, target: { type: 'agent', id: agent.id }, request_id: null, ip: null, details: { replicas_from: 1, replicas_to: 2, by: 'autoscaler' } },
    );
  });

  it('records parking an idle agent and waking it as agent.scale by the system', async () => {
    const { token } = await control.signUp();
    const agent = await createAgent(control, token, { deploy: { replicas: 1, auto_scale: true, min_replicas: 0, max_replicas: 2 } });
    const scaling = control.control.services.platformScaling;
    assert.equal(await scaling.park(agent.id, 1), true);
    assert.equal(await scaling.wake(agent.id), 'woken');
    const events = await auditEvents(control, token, 'action=agent.scale');
    assert.deepEqual(events.map((event) => [event.actor, event.target.id, event.details]), [
      [SYSTEM_ACTOR, agent.id, { replicas_from: 0, replicas_to: 1, by: 'wake' }],
      [SYSTEM_ACTOR, agent.id, { replicas_from: 1, replicas_to: 0, by: 'idle_parker', parking: 'cold' }],
    ]);
  });

  it('records a plan change through the API by its owner, with the request id', async () => {
    const { token, user } = await control.signUp();
    const changed = await control.request('POST', '/account/subscription', { token, body: { plan: 'pro' } });
    expectStatus(changed, 200);
    const event = await expectOneEvent(control, token, changed, { action: 'account.plan_change', actor: userActor(user), target: { type: 'account', id: user.account_id } });
    assert.deepEqual(event.details, { plan_from: 'free', plan_to: 'pro' });
  });

  it("records the admin command's invites, plan changes, role changes and user deletions by the system", async () => {
    const owner = await control.signUp();
    const member = await signUpMember(control, owner.user.account_id, 'member');
    await admin.createInvite(owner.user.account_id, 'viewer');
    await admin.createInvite(); // an invite to found a new account belongs to no account's log
    await admin.setPlan(owner.user.email, 'pro');
    await admin.setRole(member.user.email, 'admin');
    await admin.deleteUser(member.user.email);

    const events = await auditEvents(control, owner.token);
    const fromAdmin = events.filter((event) => event.actor.type === 'system');
    assert.deepEqual(fromAdmin.map((event) => [event.action, event.target.type, event.details]), [
      ['user.remove', 'user', { email: member.user.email, role: 'admin', user_deleted: true }],
      ['user.role_change', 'user', { email: member.user.email, role_from: 'member', role_to: 'admin' }],
      ['account.plan_change', 'account', { plan_from: 'free', plan_to: 'pro' }],
      ['invite.create', 'invite', { role: 'viewer' }],
    ]);
    for (const event of fromAdmin) {
      assert.deepEqual([event.actor, event.request_id, event.ip], [SYSTEM_ACTOR, null, null]);
    }
    assert.match(fromAdmin.at(-1).target.id, /^inv_/);
  });
});
