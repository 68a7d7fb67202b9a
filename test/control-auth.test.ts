import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { hashPassword } from '../control/crypto/passwords.js';
import { sha256Hex } from '../control/crypto/tokens.js';
import { startControl, type TestControl } from './support/control-harness.js';
import { createInvite, databaseText, expectError, expectStatus } from './support/control-api.js';

const uniqueEmail = (name = 'user') => `${name}-${randomBytes(4).toString('hex')}@example.com`;
const PASSWORD = 'correct horse battery';
const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;

describe('control API: sign-in (open registration)', () => {
  let control: TestControl;

  before(async () => {
    control = await startControl();
  });
  after(async () => control?.close());

  const register = (body: Record<string, unknown>) => control.request('POST', '/auth/register', { body });
  const login = (email: string, password: string) => control.request('POST', '/auth/login', { body: { email, password } });

  it('reports the registration mode as open by default', async () => {
    const response = await control.request('GET', '/auth/registration');
    expectStatus(response, 200);
    assert.deepEqual(response.body, { mode: 'open' });
  });

  it('registers a user as owner of a new free account and returns a session', async () => {
    const email = uniqueEmail('ann');
    const response = await register({ email, password: PASSWORD, name: 'Ann' });
    expectStatus(response, 201);
    const { token, expires_at, user } = response.body;
    assert.match(token, /^ses_/);
    assert.match(expires_at, ISO_UTC);
    assert.equal(new Date(expires_at).getTime(), control.clock.now().getTime() + 60 * 60_000);
    assert.deepEqual(Object.keys(user).sort(), ['account_id', 'created_at', 'email', 'id', 'name', 'role']);
    assert.equal(user.email, email);
    assert.equal(user.name, 'Ann');
    assert.equal(user.role, 'owner');
    assert.match(user.created_at, ISO_UTC);

    const account = await control.db('accounts').where({ id: user.account_id }).first();
    assert.equal(account.plan, 'free');
    assert.equal(account.exempt, false);
  });

  it('gives every registration its own account', async () => {
    const first = await control.signUp();
    const second = await control.signUp();
    assert.notEqual(first.user.account_id, second.user.account_id);
  });

  it('GET /auth/me returns the signed-in user', async () => {
    const { token, user } = await control.signUp({ name: 'Me Myself' });
    const response = await control.request('GET', '/auth/me', { token });
    expectStatus(response, 200);
    assert.deepEqual(response.body, { ...user, memberships: [{ account_id: user.account_id, role: 'owner', default: true }] });
    assert.equal(response.body.password_hash, undefined);
  });

  it('refuses a password shorter than 8 characters with 422 at body.password', async () => {
    expectError(await register({ email: uniqueEmail(), password: 'short77', name: 'Short' }), 422, 'VALIDATION_ERROR', ['body', 'password']);
    expectStatus(await register({ email: uniqueEmail(), password: '12345678', name: 'Exactly eight' }), 201);
  });

  it('refuses missing fields, a bad email and unknown fields with 422 at the field', async () => {
    const missing = await register({ password: PASSWORD, name: 'No email' });
    expectError(missing, 422, 'VALIDATION_ERROR', ['body', 'email']);
    assert.ok(missing.body.details.errors.some((e: any) => e.type === 'missing'));
    expectError(await register({ email: 'not-an-email', password: PASSWORD, name: 'Bad' }), 422, 'VALIDATION_ERROR', ['body', 'email']);
    expectError(await register({ email: uniqueEmail(), password: PASSWORD, name: '' }), 422, 'VALIDATION_ERROR', ['body', 'name']);
    expectError(await register({ email: uniqueEmail(), password: PASSWORD, name: 'X', role: 'owner' }), 422, 'VALIDATION_ERROR', ['body', 'role']);
  });

  it('refuses a taken email, compared case-insensitively, with 409 EMAIL_ALREADY_REGISTERED', async () => {
    const email = uniqueEmail('Case');
    expectStatus(await register({ email, password: PASSWORD, name: 'First' }), 201);
    expectError(await register({ email, password: PASSWORD, name: 'Again' }), 409, 'EMAIL_ALREADY_REGISTERED');
    expectError(await register({ email: email.toUpperCase(), password: PASSWORD, name: 'Upper' }), 409, 'EMAIL_ALREADY_REGISTERED');
  });

  it('honours an invite bound to an account: the new user joins it with the invite role', async () => {
    const owner = await control.signUp();
    const code = await createInvite(control.db, owner.user.account_id, 'viewer');
    const response = await register({ email: uniqueEmail(), password: PASSWORD, name: 'Viewer', invite_code: code });
    expectStatus(response, 201);
    assert.equal(response.body.user.account_id, owner.user.account_id);
    assert.equal(response.body.user.role, 'viewer');
  });

  it('logs in with the right password: 200 {token, expires_at, user} with a new session token', async () => {
    const { token: registered, user, password } = await control.signUp();
    const response = await login(user.email, password);
    expectStatus(response, 200);
    assert.match(response.body.token, /^ses_/);
    assert.notEqual(response.body.token, registered);
    assert.match(response.body.expires_at, ISO_UTC);
    assert.deepEqual(response.body.user, user);
    expectStatus(await control.request('GET', '/auth/me', { token: response.body.token }), 200);
    expectStatus(await control.request('GET', '/auth/me', { token: registered }), 200);
  });

  it('logs in whatever the case of the email', async () => {
    const { user, password } = await control.signUp();
    expectStatus(await login(user.email.toUpperCase(), password), 200);
  });

  it('answers an unknown email and a wrong password with the same 401 body', async () => {
    const { user } = await control.signUp();
    const wrongPassword = await login(user.email, 'wrong password!');
    const unknownEmail = await login(uniqueEmail('nobody'), 'wrong password!');
    expectError(wrongPassword, 401, 'AUTHENTICATION_FAILED');
    expectError(unknownEmail, 401, 'AUTHENTICATION_FAILED');
    assert.deepEqual(wrongPassword.body, unknownEmail.body);
  });

  it('limits login to 10 attempts a minute per client and email: the 11th gets 429 with Retry-After', async () => {
    const { user, password } = await control.signUp();
    for (let attempt = 1; attempt <= 10; attempt += 1) {
      expectError(await login(user.email, 'wrong password!'), 401, 'AUTHENTICATION_FAILED');
    }
    const limited = await login(user.email, password);
    expectError(limited, 429, 'RATE_LIMIT_EXCEEDED');
    const retryAfter = limited.headers.get('retry-after');
    assert.match(retryAfter ?? '', /^\d+$/);
    assert.ok(Number(retryAfter) >= 1 && Number(retryAfter) <= 60, `Retry-After ${retryAfter}`);

    // Another email from the same client has its own allowance.
    const other = await control.signUp();
    expectStatus(await login(other.user.email, other.password), 200);

    control.clock.advance(60_000);
    expectStatus(await login(user.email, password), 200);
  });

  it('does not let a client escape the login limit with X-Forwarded-For', async () => {
    const { user, password } = await control.signUp();
    for (let attempt = 1; attempt <= 10; attempt += 1) {
      expectError(await login(user.email, 'wrong password!'), 401, 'AUTHENTICATION_FAILED');
    }
    const spoofed = await control.request('POST', '/auth/login', {
      body: { email: user.email, password },
      headers: { 'x-forwarded-for': '203.0.113.7' },
    });
    expectError(spoofed, 429, 'RATE_LIMIT_EXCEEDED');
  });

  it('registers one user when the same email registers in parallel; the others get 409', async () => {
    const email = uniqueEmail('race');
    const responses = await Promise.all(Array.from({ length: 5 }, () => register({ email, password: PASSWORD, name: 'Racer' })));
    assert.deepEqual(responses.map((r) => r.status).sort(), [201, 409, 409, 409, 409]);
    for (const response of responses.filter((r) => r.status === 409)) expectError(response, 409, 'EMAIL_ALREADY_REGISTERED');
    const users = await control.db('users').whereRaw('lower(email) = lower(?)', [email]);
    assert.equal(users.length, 1);
  });

  it('lets one invite code register only one user, even in parallel', async () => {
    const owner = await control.signUp();
    const code = await createInvite(control.db, owner.user.account_id, 'member');
    const responses = await Promise.all(
      Array.from({ length: 4 }, () => register({ email: uniqueEmail('inv'), password: PASSWORD, name: 'Invitee', invite_code: code })),
    );
    assert.deepEqual(responses.map((r) => r.status).sort(), [201, 403, 403, 403]);
    for (const response of responses.filter((r) => r.status === 403)) expectError(response, 403, 'INVALID_INVITE');
  });

  it('expires a session token after 60 minutes', async () => {
    const { token } = await control.signUp();
    control.clock.advance(59 * 60_000);
    expectStatus(await control.request('GET', '/auth/me', { token }), 200);
    control.clock.advance(60_000 + 1000);
    expectError(await control.request('GET', '/auth/me', { token }), 401, 'AUTHENTICATION_FAILED');
    expectError(await control.request('GET', '/agents', { token }), 401, 'AUTHENTICATION_FAILED');
  });

  it('keeps a personal API key working after the session that made it expired', async () => {
    const { token } = await control.signUp();
    const created = await control.request('POST', '/api-keys', { token, body: { label: 'ci' } });
    expectStatus(created, 201);
    control.clock.advance(60 * 60_000 + 1000);
    expectError(await control.request('GET', '/auth/me', { token }), 401, 'AUTHENTICATION_FAILED');
    expectStatus(await control.request('GET', '/auth/me', { token: created.body.key }), 200);
  });

  it('refuses a missing, malformed or made-up token with 401 AUTHENTICATION_FAILED', async () => {
    expectError(await control.request('GET', '/auth/me'), 401, 'AUTHENTICATION_FAILED');
    expectError(await control.request('GET', '/auth/me', { headers: { authorization: 'Basic dXNlcjpwYXNz' } }), 401, 'AUTHENTICATION_FAILED');
    expectError(await control.request('GET', '/auth/me', { token: `ses_${'x'.repeat(43)}` }), 401, 'AUTHENTICATION_FAILED');
    expectError(await control.request('GET', '/auth/me', { token: `agnt_${'x'.repeat(43)}` }), 401, 'AUTHENTICATION_FAILED');
    expectError(await control.request('GET', '/auth/me', { token: 'garbage' }), 401, 'AUTHENTICATION_FAILED');
  });

  it('stores passwords and session tokens only as hashes', async () => {
    const password = `pw-${randomBytes(8).toString('hex')}`;
    const { token } = await control.signUp({ password });
    const stored = await databaseText(control.db);
    assert.ok(!stored.includes(password), 'the password is stored in the clear');
    assert.ok(!stored.includes(token), 'the session token is stored in the clear');
    assert.ok(stored.includes(sha256Hex(token)), 'the session is stored by its SHA-256');
  });
});

describe('control API: sign-in (invite registration)', () => {
  let control: TestControl;

  before(async () => {
    control = await startControl({ REGISTRATION_MODE: 'invite' });
  });
  after(async () => control?.close());

  const register = (body: Record<string, unknown>) =>
    control.request('POST', '/auth/register', { body: { email: uniqueEmail(), password: PASSWORD, name: 'Invited', ...body } });

  it('reports the registration mode as invite', async () => {
    const response = await control.request('GET', '/auth/registration');
    expectStatus(response, 200);
    assert.deepEqual(response.body, { mode: 'invite' });
  });

  it('refuses registration without an invite code or with a bad one: 403 INVALID_INVITE', async () => {
    expectError(await register({}), 403, 'INVALID_INVITE');
    expectError(await register({ invite_code: 'invite_made_up' }), 403, 'INVALID_INVITE');
  });

  it('registers with a valid code into a new free account, and refuses the code a second time', async () => {
    const code = await createInvite(control.db);
    const first = await register({ invite_code: code });
    expectStatus(first, 201);
    assert.equal(first.body.user.role, 'owner');
    const account = await control.db('accounts').where({ id: first.body.user.account_id }).first();
    assert.equal(account.plan, 'free');

    expectError(await register({ invite_code: code }), 403, 'INVALID_INVITE');
  });

  it('joins the account an invite names, as member when it names no role', async () => {
    const owner = await register({ invite_code: await createInvite(control.db) });
    expectStatus(owner, 201);
    const member = await register({ invite_code: await createInvite(control.db, owner.body.user.account_id, null) });
    expectStatus(member, 201);
    assert.equal(member.body.user.account_id, owner.body.user.account_id);
    assert.equal(member.body.user.role, 'member');
  });

  it('does not use up an invite on a registration that fails', async () => {
    const taken = await register({ invite_code: await createInvite(control.db) });
    expectStatus(taken, 201);
    const code = await createInvite(control.db);
    expectError(await register({ email: taken.body.user.email, invite_code: code }), 409, 'EMAIL_ALREADY_REGISTERED');
    expectStatus(await register({ invite_code: code }), 201);
  });
});

describe('control API: sign-in (closed registration)', () => {
  let control: TestControl;

  before(async () => {
    control = await startControl({ REGISTRATION_MODE: 'closed' });
  });
  after(async () => control?.close());

  it('reports the registration mode as closed', async () => {
    const response = await control.request('GET', '/auth/registration');
    expectStatus(response, 200);
    assert.deepEqual(response.body, { mode: 'closed' });
  });

  it('refuses every registration with 403 REGISTRATION_CLOSED, even with an invite', async () => {
    const body = { email: uniqueEmail(), password: PASSWORD, name: 'Closed' };
    expectError(await control.request('POST', '/auth/register', { body }), 403, 'REGISTRATION_CLOSED');
    const invite_code = await createInvite(control.db);
    expectError(await control.request('POST', '/auth/register', { body: { ...body, invite_code } }), 403, 'REGISTRATION_CLOSED');
  });

  it('still lets existing users sign in', async () => {
    const accountId = `acc_${randomBytes(8).toString('hex')}`;
    const email = uniqueEmail('existing');
    await control.db('accounts').insert({ id: accountId, plan: 'free', exempt: false, created_at: new Date() });
    const userId = `usr_${randomBytes(8).toString('hex')}`;
    await control.db('users').insert({ id: userId, account_id: accountId, email, name: 'Existing', password_hash: await hashPassword(PASSWORD), created_at: new Date() });
    // Roles live on memberships since migration 013.
    await control.db('account_members').insert({ account_id: accountId, user_id: userId, role: 'owner', created_at: new Date() });
    const response = await control.request('POST', '/auth/login', { body: { email, password: PASSWORD } });
    expectStatus(response, 200);
    assert.equal(response.body.user.account_id, accountId);
  });
});
