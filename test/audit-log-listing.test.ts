import assert from 'node:assert/strict';
import { startControl, type TestControl } from './support/control-harness.js';
import { createAgent, expectError, expectStatus, signUpMember } from './support/control-api.js';
import { auditEvents } from './support/audit.js';

const DAY_MS = 86_400_000;

/** GET /v1/account/audit-events: who may read it, its filters and pages, and its retention (issue 20). */
describe('audit log: reading and pruning', () => {
  let control: TestControl;

  before(async () => {
    control = await startControl();
  });
  after(async () => control?.close());

  const list = (token: string, query = '') => control.request('GET', `/account/audit-events${query}`, { token });

  it('is read by owners and admins; members and viewers get 403 AUTHORISATION_DENIED', async () => {
    const owner = await control.signUp();
    const [admin, member, viewer] = await Promise.all(['admin', 'member', 'viewer'].map((role) => signUpMember(control, owner.user.account_id, role)));
    expectStatus(await list(owner.token), 200);
    expectStatus(await list(admin!.token), 200);
    expectError(await list(member!.token), 403, 'AUTHORISATION_DENIED');
    expectError(await list(viewer!.token), 403, 'AUTHORISATION_DENIED');
  });

  it("shows the caller's account only", async () => {
    const mine = await control.signUp();
    const theirs = await control.signUp();
    await createAgent(control, theirs.token, { name: 'not mine' });
    const events = await auditEvents(control, mine.token);
    assert.deepEqual(events, []);
  });

  it('filters by action, agent (its access keys too), actor and time, and pages newest first', async () => {
    const owner = await control.signUp();
    const admin = await signUpMember(control, owner.user.account_id, 'admin');
    const start = control.clock.now();
    const first = await createAgent(control, owner.token, { name: 'first', access: 'public' });
    control.clock.advance(60_000);
    const second = await createAgent(control, admin.token, { name: 'second', access: 'public' });
    control.clock.advance(60_000);
    const key = await control.request('POST', `/agents/${first.id}/access-keys`, { token: admin.token, body: { label: 'k' } });
    expectStatus(key, 201);

    const byAction = await auditEvents(control, owner.token, 'action=agent.create');
    assert.deepEqual(byAction.map((e) => e.target.id), [second.id, first.id]);
    const byAgent = await auditEvents(control, owner.token, `agent_id=${first.id}`);
    assert.deepEqual(byAgent.map((e) => e.action), ['access_key.create', 'agent.create']);
    const byActor = await auditEvents(control, owner.token, `actor_id=${admin.user.id}`);
    assert.deepEqual(byActor.map((e) => e.action), ['access_key.create', 'agent.create']);
    const iso = (offsetMs: number) => encodeURIComponent(new Date(start.getTime() + offsetMs).toISOString());
    const window = await auditEvents(control, owner.token, `since=${iso(60_000)}&until=${iso(120_000)}`);
    assert.deepEqual(window.map((e) => e.target.id), [second.id], 'since is inclusive, until exclusive');

    // admin's sign-up is not an event; the owner's account holds these three.
    const page1 = await list(owner.token, '?page_size=2');
    expectStatus(page1, 200);
    assert.deepEqual({ ...page1.body, events: page1.body.events.map((e: any) => e.action) }, {
      events: ['access_key.create', 'agent.create'], total: 3, page: 1, page_size: 2, has_next: true,
    });
    const page2 = await list(owner.token, '?page_size=2&page=2');
    assert.deepEqual(page2.body.events.map((e: any) => e.target.id), [first.id]);
    assert.equal(page2.body.has_next, false);
  });

  it('answers bad filters with 422 naming the parameter', async () => {
    const { token } = await control.signUp();
    expectError(await list(token, '?action=agent.explode'), 422, 'VALIDATION_ERROR', ['query', 'action']);
    expectError(await list(token, '?since=yesterday'), 422, 'VALIDATION_ERROR', ['query', 'since']);
    expectError(await list(token, '?page=0'), 422, 'VALIDATION_ERROR', ['query', 'page']);
    expectError(await list(token, '?page_size=101'), 422, 'VALIDATION_ERROR', ['query', 'page_size']);
    expectError(await list(token, '?since=2026-01-02T00:00:00Z&until=2026-01-01T00:00:00Z'), 422, 'VALIDATION_ERROR', ['query', 'until']);
  });

  it('keeps events AUDIT_RETENTION_DAYS (400) and the housekeeping pass prunes older ones', async () => {
    const session = await control.signUp();
    // A personal API key outlives the sessions the clock's jumps expire.
    const key = await control.request('POST', '/api-keys', { token: session.token, body: { label: 'years' } });
    expectStatus(key, 201);
    const token: string = key.body.key;
    const old = await createAgent(control, token, { name: 'long ago' });
    control.clock.advance(DAY_MS);
    const kept = await createAgent(control, token, { name: 'a day later' });
    await control.control.loops.housekeeping.runOnce();
    const targets = async () => (await auditEvents(control, token, 'action=agent.create')).map((e) => e.target.id);
    assert.deepEqual(await targets(), [kept.id, old.id], 'nothing young is pruned');

    // The first event is now just past 400 days old, the second a day younger.
    control.clock.advance(399 * DAY_MS + 60_000);
    await control.control.loops.housekeeping.runOnce();
    assert.deepEqual(await targets(), [kept.id]);
  });
});
