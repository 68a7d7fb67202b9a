import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { startControl, type TestControl } from './support/control-harness.js';
import { createAgent, createInvite, databaseText, expectError, expectStatus, signUpMember } from './support/control-api.js';
import { auditEvents } from './support/audit.js';
import { startSmtpInbox, type SmtpInbox } from './support/smtp-inbox.js';
import { waitFor } from './support/wait.js';
import { WebhookReceiver } from './support/webhook-receiver.js';

const CONSOLE = 'http://console.test';
const HOUR_MS = 3_600_000;

/** Teams (issue 39): invites by mail, accepting them, several accounts per user, roles and removal. */
describe('teams: invites, memberships and roles', function () {
  this.timeout(60_000);
  let control: TestControl;
  let inbox: SmtpInbox;
  /** Every response body this suite saw, to check no secret but the inviter's link ever left. */
  const seen: { status: number; body: string }[] = [];

  before(async () => {
    inbox = await startSmtpInbox('mailer', `smtp-pass-${randomBytes(8).toString('hex')}`);
    control = await startControl({
      SMTP_URL: inbox.url, SMTP_FROM: 'team@console.test', PUBLIC_API_URL: CONSOLE, REGISTRATION_MODE: 'invite',
      // The webhook receiver listens on 127.0.0.1.
      WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', WEBHOOK_POLL_INTERVAL_MS: '200',
    });
  });
  after(async () => {
    await control?.close();
    await inbox?.close();
  });

  async function request(method: string, path: string, options: { token?: string; body?: unknown; account?: string } = {}) {
    const response = await control.request(method, path, { token: options.token, body: options.body, headers: options.account ? { 'X-Account-Id': options.account } : undefined });
    seen.push({ status: response.status, body: JSON.stringify(response.body) ?? '' });
    return response;
  }
  /** An owner of a new account: registration is by invite here, so by an operator's code. */
  const newOwner = async () => control.signUp({ invite_code: await createInvite(control.db) });
  const uniqueEmail = (name: string) => `${name}-${randomBytes(4).toString('hex')}@example.com`;
  async function invite(token: string, email: string, role: string) {
    const created = await request('POST', '/account/invites', { token, body: { email, role } });
    expectStatus(created, 201);
    return { ...created.body, secret: new URL(created.body.link).hash.slice(1) as string };
  }
  const accept = (secret: string, options: { token?: string; body?: unknown } = {}) => request('POST', `/auth/invites/${secret}/accept`, options);

  it('an owner invites by mail; the colleague registers through the link in invite mode and sees the agents as a viewer, who cannot deploy', async () => {
    const owner = await newOwner();
    const agent = await createAgent(control, owner.token, { name: 'shared agent' });
    const email = uniqueEmail('colleague');

    const created = await invite(owner.token, email, 'viewer');
    assert.match(created.id, /^inv_/);
    assert.equal(created.email, email);
    assert.equal(created.role, 'viewer');
    assert.equal(Date.parse(created.expires_at) - Date.parse(created.created_at), 168 * HOUR_MS);
    assert.match(created.link, new RegExp(`^${CONSOLE}/invites#invite_[0-9A-Za-z]{43}$`));

    const mail = await inbox.mailTo(email);
    assert.equal(mail.from, 'team@console.test');
    const mailed = /(http:\/\/console\.test\/invites#\S+)/.exec(mail.text)?.[1];
    assert.equal(mailed, created.link, 'the mail carries the link');
    const secret = new URL(mailed!).hash.slice(1);

    const registered = await accept(secret, { body: { name: 'Grace', password: 'correct horse battery' } });
    expectStatus(registered, 201);
    assert.match(registered.body.token, /^ses_/);
    assert.deepEqual([registered.body.user.email, registered.body.user.role, registered.body.user.account_id], [email, 'viewer', owner.user.account_id]);
    const colleague = registered.body.token;

    const me = await request('GET', '/auth/me', { token: colleague });
    expectStatus(me, 200);
    assert.deepEqual(me.body.memberships, [{ account_id: owner.user.account_id, role: 'viewer', default: true }]);
    const agents = await request('GET', '/agents', { token: colleague });
    expectStatus(agents, 200);
    assert.deepEqual(agents.body.agents.map((a: any) => a.id), [agent.id]);
    expectError(await request('POST', `/agents/${agent.id}/deploy`, { token: colleague, body: {} }), 403, 'AUTHORISATION_DENIED');

    // Used once; and no longer pending.
    expectError(await accept(secret, { body: { name: 'Again', password: 'correct horse battery' } }), 404, 'INVITE_NOT_FOUND');
    const pending = await request('GET', '/account/invites', { token: owner.token });
    assert.deepEqual(pending.body.invites, []);

    const events = await auditEvents(control, owner.token);
    const accepted = events.find((event) => event.action === 'invite.accept');
    assert.deepEqual([accepted?.target, accepted?.actor.email, accepted?.details], [{ type: 'invite', id: created.id }, email, { email, role: 'viewer' }]);
    const made = events.find((event) => event.action === 'invite.create');
    assert.deepEqual([made?.target, made?.actor.id], [{ type: 'invite', id: created.id }, owner.user.id]);
  });

  it('lets owners and admins invite and list, an admin not an owner; members and viewers neither', async () => {
    const owner = await newOwner();
    const admin = await signUpMember(control, owner.user.account_id, 'admin');
    const member = await signUpMember(control, owner.user.account_id, 'member');
    const viewer = await signUpMember(control, owner.user.account_id, 'viewer');

    expectError(await request('POST', '/account/invites', { token: admin.token, body: { email: uniqueEmail('boss'), role: 'owner' } }), 403, 'AUTHORISATION_DENIED');
    const byAdmin = await invite(admin.token, uniqueEmail('dev'), 'member');
    control.clock.advance(1000); // newest first: the harness clock stands still otherwise
    const byOwner = await invite(owner.token, uniqueEmail('co-owner'), 'owner');
    for (const caller of [member, viewer]) {
      expectError(await request('POST', '/account/invites', { token: caller.token, body: { email: uniqueEmail('x'), role: 'viewer' } }), 403, 'AUTHORISATION_DENIED');
      expectError(await request('GET', '/account/invites', { token: caller.token }), 403, 'AUTHORISATION_DENIED');
      expectError(await request('DELETE', `/account/invites/${byAdmin.id}`, { token: caller.token }), 403, 'AUTHORISATION_DENIED');
    }
    expectError(await request('POST', '/account/invites', { token: owner.token, body: { email: member.user.email.toUpperCase(), role: 'admin' } }), 409, 'ALREADY_A_MEMBER');

    const listed = await request('GET', '/account/invites', { token: admin.token });
    expectStatus(listed, 200);
    assert.deepEqual(listed.body.invites.map((i: any) => i.id), [byOwner.id, byAdmin.id]);
    assert.ok(listed.body.invites.every((i: any) => !('link' in i)), 'a listing never shows a link');
  });

  it('refuses a revoked invite (404), an expired one (410, no longer pending) and an unknown secret (404)', async () => {
    const owner = await newOwner();
    const revoked = await invite(owner.token, uniqueEmail('revoked'), 'member');
    const revoking = await request('DELETE', `/account/invites/${revoked.id}`, { token: owner.token });
    expectStatus(revoking, 204);
    expectError(await request('DELETE', `/account/invites/${revoked.id}`, { token: owner.token }), 404, 'NOT_FOUND');
    expectError(await accept(revoked.secret, { body: { name: 'R', password: 'correct horse battery' } }), 404, 'INVITE_NOT_FOUND');
    const events = await auditEvents(control, owner.token, 'action=invite.revoke');
    assert.deepEqual(events.map((event) => event.target.id), [revoked.id]);

    expectError(await accept('invite_doesnotexist', { body: { name: 'R', password: 'correct horse battery' } }), 404, 'INVITE_NOT_FOUND');

    const expiring = await invite(owner.token, uniqueEmail('late'), 'member');
    control.clock.advance(168 * HOUR_MS + 1000);
    expectError(await accept(expiring.secret, { body: { name: 'L', password: 'correct horse battery' } }), 410, 'INVITE_EXPIRED');
    const owner2 = await control.request('POST', '/auth/login', { body: { email: owner.user.email, password: owner.password } });
    assert.deepEqual((await request('GET', '/account/invites', { token: owner2.body.token })).body.invites, []);
  });

  it('lets a signed-in user of another account join, select either account with X-Account-Id (an API key too), and refuses other accounts alike', async () => {
    const alice = await newOwner();
    const aliceAgent = await createAgent(control, alice.token, { name: 'alice agent' });
    const bob = await newOwner();
    const bobAgent = await createAgent(control, bob.token, { name: 'bob agent' });
    const carol = await newOwner();

    const forBob = await invite(alice.token, bob.user.email.toUpperCase(), 'member');
    expectError(await accept(forBob.secret, { token: carol.token }), 403, 'INVITE_EMAIL_MISMATCH');
    const joined = await accept(forBob.secret, { token: bob.token });
    expectStatus(joined, 200);
    assert.deepEqual(joined.body, { account_id: alice.user.account_id, role: 'member', default: false });

    const me = await request('GET', '/auth/me', { token: bob.token });
    assert.deepEqual(me.body.memberships, [
      { account_id: bob.user.account_id, role: 'owner', default: true },
      { account_id: alice.user.account_id, role: 'member', default: false },
    ]);
    const ids = async (account?: string, token = bob.token) => (await request('GET', '/agents', { token, account })).body.agents.map((a: any) => a.id);
    assert.deepEqual(await ids(), [bobAgent.id]);
    assert.deepEqual(await ids(alice.user.account_id), [aliceAgent.id]);
    const inAlice = await request('GET', '/auth/me', { token: bob.token, account: alice.user.account_id });
    assert.deepEqual([inAlice.body.account_id, inAlice.body.role], [alice.user.account_id, 'member']);
    // As a member of Alice's account, Bob may not list its users, though he may in his own.
    expectError(await request('GET', '/account/users', { token: bob.token, account: alice.user.account_id }), 403, 'AUTHORISATION_DENIED');
    expectStatus(await request('GET', '/account/users', { token: bob.token }), 200);

    const key = await request('POST', '/api-keys', { token: bob.token, body: { label: 'ci' } });
    assert.deepEqual(await ids(alice.user.account_id, key.body.key), [aliceAgent.id]);

    const notMine = await request('GET', '/agents', { token: bob.token, account: carol.user.account_id });
    const nobody = await request('GET', '/agents', { token: bob.token, account: 'acc_doesnotexist0000000' });
    expectError(notMine, 403, 'AUTHORISATION_DENIED');
    expectError(nobody, 403, 'AUTHORISATION_DENIED');
    assert.equal(notMine.body.message, nobody.body.message, 'an existing account is refused as a missing one');
    // The refusal names the header that chose the account, unlike a role's refusal, so a client can tell the two apart.
    assert.deepEqual([notMine.body.details, nobody.body.details], [{ header: 'X-Account-Id' }, { header: 'X-Account-Id' }]);
    const byRole = await request('GET', '/account/users', { token: bob.token, account: alice.user.account_id });
    assert.deepEqual(byRole.body.details, {});

    const again = await invite(carol.token, uniqueEmail('dave'), 'viewer');
    const dave = await accept(again.secret, { body: { name: 'Dave', password: 'correct horse battery' } });
    const forDave = await invite(alice.token, dave.body.user.email, 'viewer');
    expectStatus(await accept(forDave.secret, { token: dave.body.token }), 200);
    const twice = await invite(bob.token, dave.body.user.email, 'viewer');
    expectStatus(await accept(twice.secret, { token: dave.body.token }), 200);
    expectError(await request('POST', '/account/invites', { token: alice.token, body: { email: dave.body.user.email, role: 'member' } }), 409, 'ALREADY_A_MEMBER');
  });

  it('changes roles by the rules: owners any, admins member and viewer only, never the last owner', async () => {
    const owner = await newOwner();
    const account = owner.user.account_id;
    const admin = await signUpMember(control, account, 'admin');
    const member = await signUpMember(control, account, 'member');
    const patch = (token: string, id: string, role: string) => request('PATCH', `/account/users/${id}`, { token, body: { role } });

    const toViewer = await patch(admin.token, member.user.id, 'viewer');
    expectStatus(toViewer, 200);
    assert.equal(toViewer.body.role, 'viewer');
    expectError(await patch(admin.token, member.user.id, 'admin'), 403, 'AUTHORISATION_DENIED');
    expectError(await patch(admin.token, member.user.id, 'owner'), 403, 'AUTHORISATION_DENIED');
    expectError(await patch(admin.token, owner.user.id, 'member'), 403, 'AUTHORISATION_DENIED');
    expectError(await patch(member.token, member.user.id, 'owner'), 403, 'AUTHORISATION_DENIED');
    expectError(await patch(owner.token, owner.user.id, 'admin'), 409, 'LAST_OWNER');
    expectError(await patch(owner.token, 'usr_nobody', 'admin'), 404, 'NOT_FOUND');

    expectStatus(await patch(owner.token, admin.user.id, 'owner'), 200);
    const me = await request('GET', '/auth/me', { token: admin.token });
    assert.equal(me.body.role, 'owner');
    const events = await auditEvents(control, owner.token, 'action=user.role_change');
    assert.deepEqual(events.map((event) => [event.target.id, event.details.role_from, event.details.role_to]), [
      [admin.user.id, 'admin', 'owner'],
      [member.user.id, 'member', 'viewer'],
    ]);

  });

  it('lets only one of two owners demoting each other at once through: the account keeps an owner', async () => {
    for (let round = 0; round < 5; round += 1) {
      const first = await newOwner();
      const second = await signUpMember(control, first.user.account_id, 'owner');
      const patch = (token: string, id: string) => request('PATCH', `/account/users/${id}`, { token, body: { role: 'member' } });
      const answers = await Promise.all([patch(first.token, second.user.id), patch(second.token, first.user.id)]);
      // The loser finds the account down to one owner (409) or, if it came after the winner's commit, itself no longer an owner (403).
      const statuses = answers.map((answer) => answer.status).sort();
      assert.ok(statuses[0] === 200 && [403, 409].includes(statuses[1]!), JSON.stringify(answers.map((answer) => answer.body)));
      const owners = await control.db('account_members').where({ account_id: first.user.account_id, role: 'owner' });
      assert.equal(owners.length, 1);
    }
  });

  it('removes a membership: a user of several accounts keeps the others, one of one account is deleted; never the last owner', async () => {
    const alice = await newOwner();
    const bob = await newOwner();
    const forBob = await invite(alice.token, bob.user.email, 'admin');
    expectStatus(await accept(forBob.secret, { token: bob.token }), 200);
    const solo = await signUpMember(control, alice.user.account_id, 'member');

    expectError(await request('DELETE', `/account/users/${alice.user.id}`, { token: bob.token, account: alice.user.account_id }), 403, 'AUTHORISATION_DENIED');
    expectError(await request('DELETE', `/account/users/${alice.user.id}`, { token: alice.token }), 409, 'LAST_OWNER');
    const removed = await request('DELETE', `/account/users/${bob.user.id}`, { token: alice.token });
    expectStatus(removed, 204);
    expectError(await request('GET', '/agents', { token: bob.token, account: alice.user.account_id }), 403, 'AUTHORISATION_DENIED');
    const bobMe = await request('GET', '/auth/me', { token: bob.token });
    assert.deepEqual(bobMe.body.memberships, [{ account_id: bob.user.account_id, role: 'owner', default: true }]);

    expectStatus(await request('DELETE', `/account/users/${solo.user.id}`, { token: alice.token }), 204);
    expectError(await request('GET', '/auth/me', { token: solo.token }), 401, 'AUTHENTICATION_FAILED');
    assert.equal(await control.db('users').where({ id: solo.user.id }).first(), undefined);

    const events = await auditEvents(control, alice.token, 'action=user.remove');
    assert.deepEqual(events.map((event) => [event.target.id, event.details.user_deleted]), [[solo.user.id, true], [bob.user.id, false]]);
  });

  it('a user whose default account is deleted keeps their other accounts', async () => {
    const alice = await newOwner();
    const bob = await newOwner();
    const forBob = await invite(alice.token, bob.user.email, 'viewer');
    expectStatus(await accept(forBob.secret, { token: bob.token }), 200);
    expectStatus(await request('DELETE', '/account', { token: bob.token, body: { confirm: bob.user.account_id } }), 204);
    const me = await request('GET', '/auth/me', { token: bob.token });
    expectStatus(me, 200);
    assert.deepEqual(me.body.memberships, [{ account_id: alice.user.account_id, role: 'viewer', default: true }]);
  });

  it('sends member.added when an invite is accepted and member.removed when a member is removed', async () => {
    const receiver = await new WebhookReceiver().start();
    control.control.loops.webhooks.start();
    try {
      const owner = await newOwner();
      const hook = await request('POST', '/account/webhooks', { token: owner.token, body: { url: receiver.url(), events: ['member.added', 'member.removed'] } });
      expectStatus(hook, 201);
      const email = uniqueEmail('hooked');
      const created = await invite(owner.token, email, 'member');
      const joined = await accept(created.secret, { body: { name: 'Hooked', password: 'correct horse battery' } });
      expectStatus(await request('DELETE', `/account/users/${joined.body.user.id}`, { token: owner.token }), 204);

      const received = await waitFor('both events', async () => (receiver.received.length >= 2 ? receiver.received : undefined), 10_000);
      const bodies = received.map((r) => JSON.parse(r.body)).sort((a, b) => a.type.localeCompare(b.type));
      assert.deepEqual(bodies.map((b) => [b.type, b.data.member.id, b.data.member.email, b.data.member.role, b.data.member.account_id]), [
        ['member.added', joined.body.user.id, email, 'member', owner.user.account_id],
        ['member.removed', joined.body.user.id, email, 'member', owner.user.account_id],
      ]);
      assert.ok(received.every((r) => !r.body.includes(created.secret)));
    } finally {
      await control.control.loops.webhooks.stop();
      await receiver.close();
    }
  });

  it('keeps the invite secret and the SMTP password out of every response but the link to the inviter, and out of the database', async () => {
    const owner = await newOwner();
    const created = await invite(owner.token, uniqueEmail('secretive'), 'member');
    const fromCreate = seen.pop()!;
    await accept(created.secret, { body: { name: 'S', password: 'correct horse battery' } });
    assert.ok(fromCreate.body.includes(created.secret));
    for (const response of seen) {
      assert.ok(!response.body.includes(created.secret), `the secret in a ${response.status} response`);
      assert.ok(!response.body.includes(inbox.password), `the SMTP password in a ${response.status} response`);
    }
    const stored = await databaseText(control.db);
    assert.ok(!stored.includes(created.secret));
    assert.ok(!stored.includes(inbox.password));
    assert.ok((await auditEvents(control, owner.token)).every((event) => !JSON.stringify(event).includes(created.secret)));
  });
});

describe('teams: accepting with registration closed and no mail server', () => {
  let control: TestControl;
  before(async () => {
    control = await startControl({ REGISTRATION_MODE: 'closed' });
  });
  after(async () => control?.close());

  it('registers the invited person anyway, through a link on the control API itself', async () => {
    const [owner] = await control.db('users').select('id').limit(1);
    assert.equal(owner, undefined);
    expectError(await control.request('POST', '/auth/register', { body: { email: 'x@example.com', password: 'correct horse battery', name: 'X' } }), 403, 'REGISTRATION_CLOSED');
    // Closed: the first owner comes from the operator's code path, which registration refuses too, so seed one directly.
    const accountId = `acc_${randomBytes(10).toString('hex')}`;
    await control.db('accounts').insert({ id: accountId, plan: 'free', exempt: false, created_at: new Date() });
    const code = await createInvite(control.db, accountId, 'owner');
    const inviteRow = await control.db('invites').orderBy('created_at', 'desc').first();
    await control.db('invites').where({ id: inviteRow.id }).update({ email: 'closed@example.com', expires_at: new Date(control.clock.now().getTime() + 3_600_000) });
    const accepted = await control.request('POST', `/auth/invites/${code}/accept`, { body: { name: 'C', password: 'correct horse battery' } });
    expectStatus(accepted, 201);
    assert.deepEqual([accepted.body.user.email, accepted.body.user.role], ['closed@example.com', 'owner']);

    const created = await control.request('POST', '/account/invites', { token: accepted.body.token, body: { email: 'next@example.com', role: 'member' } });
    expectStatus(created, 201);
    assert.match(created.body.link, /^\/invites#invite_/);
    const next = await control.request('POST', `/auth/invites/${created.body.link.split('#')[1]}/accept`, { body: { name: 'N', password: 'correct horse battery' } });
    expectStatus(next, 201);
    assert.equal(next.body.user.role, 'member');
  });
});
