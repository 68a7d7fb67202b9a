import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import { SecretBox } from '../control/crypto/secret-box.js';
import { KeyRotation } from '../control/services/key-rotation.js';
import { auditEvents } from './support/audit.js';
import { CliUser } from './support/cli-runner.js';
import { startControl, type TestControl } from './support/control-harness.js';
import { createAgent, createInvite, databaseText, expectError, expectStatus, signUpMember } from './support/control-api.js';
import { SseReader } from './support/orch-helpers.js';
import { startIdentityProvider, TestBrowser, type TestIdentityProvider } from './support/sso-provider.js';

/** PUBLIC_API_URL: a name no DNS knows, which the test's browser sends to the control API's port. */
const PUBLIC = 'http://control.sso.test';
const CALLBACK = `${PUBLIC}/v1/auth/sso/callback`;

/** Single sign-on (issue 39) against a real OpenID provider, oidc-provider, on 127.0.0.1. */
describe('single sign-on (OpenID Connect)', function () {
  this.timeout(60_000);
  let provider: TestIdentityProvider;
  let control: TestControl;
  let logged = '';
  const run = randomBytes(3).toString('hex');
  const emailOf = (name: string, domain = 'acme.test') => `${name}-${run}@${domain}`;
  // The logins typed at the provider's form, each a user it knows.
  const people = ['member', 'ada', 'outsider', 'tamper', 'replay', 'required', 'streams', 'cli'];

  before(async () => {
    provider = await startIdentityProvider(CALLBACK, Object.fromEntries(people.map((login) => [
      login, { email: emailOf(login, login === 'outsider' ? 'elsewhere.test' : 'acme.test'), name: `Person ${login}` },
    ])));
    const logs = new Writable({ write: (chunk, _encoding, done) => ((logged += chunk), done()) });
    control = await startControl({ PUBLIC_API_URL: PUBLIC, SSO_ALLOW_INSECURE_ISSUERS: 'true', LOG_LEVEL: 'debug' }, { logTo: logs });
  });
  after(async () => {
    await control?.close();
    await provider?.close();
  });

  const browser = () => new TestBrowser(PUBLIC, new URL(control.baseUrl).origin);

  /** A new account whose owner configures SSO with `overrides`; its slug and owner. */
  async function ssoAccount(overrides: Record<string, unknown> = {}) {
    const owner = await control.signUp();
    const slug = `acme-${randomBytes(4).toString('hex')}`;
    const saved = await control.request('PUT', '/account/sso', { token: owner.token, body: settings({ slug, ...overrides }) });
    expectStatus(saved, 200);
    return { owner, slug, accountId: owner.user.account_id as string };
  }

  const settings = (overrides: Record<string, unknown> = {}) => ({
    issuer_url: provider.issuer,
    client_id: provider.clientId,
    client_secret: provider.clientSecret,
    allowed_email_domains: ['acme.test'],
    default_role: 'viewer',
    required: false,
    slug: `acme-${randomBytes(4).toString('hex')}`,
    ...overrides,
  });

  /** Signs `login` in through the provider for the account `slug`: the callback's answer. */
  async function signInAt(slug: string, login: string, client = browser()): Promise<{ callback: Response; callbackUrl: string }> {
    const callbackUrl = await client.throughProvider(`${control.baseUrl}/auth/sso/${slug}/start`, login);
    return { callback: await client.fetch(callbackUrl), callbackUrl };
  }

  /** The console's part: the one-time code from the fragment of /sso, traded for a session. */
  async function exchange(callback: Response) {
    assert.equal(callback.status, 302, await callback.clone().text());
    const location = new URL(callback.headers.get('location')!);
    assert.equal(`${location.origin}${location.pathname}`, `${PUBLIC}/sso`, 'the console, with the code in the fragment');
    assert.equal(location.search, '', 'nothing for a server to log in the query');
    const code = new URLSearchParams(location.hash.slice(1)).get('code')!;
    return control.request('POST', '/auth/sso/exchange', { body: { code } });
  }

  async function expectRefused(callback: Response, status: number, code: string) {
    const body = await callback.json() as { code: string };
    assert.equal(callback.status, status, JSON.stringify(body));
    assert.equal(body.code, code);
  }

  describe('settings', () => {
    it('PUT seals the client secret, GET shows it masked, a taken slug is 409, audited as sso.update', async () => {
      const { owner, slug, accountId } = await ssoAccount({ default_role: 'member' });
      const shown = await control.request('GET', '/account/sso', { token: owner.token });
      expectStatus(shown, 200);
      assert.equal(shown.body.client_secret_set, true);
      assert.equal(shown.body.client_secret, undefined);
      assert.equal(shown.body.slug, slug);
      assert.equal(shown.body.callback_url, CALLBACK);
      assert.equal(shown.body.start_url, `${PUBLIC}/v1/auth/sso/${slug}/start`);
      const row = await control.db('account_sso').where({ account_id: accountId }).first();
      assert.match(row.client_secret_sealed, /^v2\./);
      assert.equal(new SecretBox(control.config.masterKeys).open(row.client_secret_sealed), provider.clientSecret);

      const other = await control.signUp();
      expectError(await control.request('PUT', '/account/sso', { token: other.token, body: settings({ slug }) }), 409, 'SSO_SLUG_TAKEN');
      const events = await auditEvents(control, owner.token, 'action=sso.update');
      assert.equal(events.length, 1);
      assert.equal(events[0].details.slug, slug);
      assert.ok(!JSON.stringify(events).includes(provider.clientSecret));
    });

    it('an issuer without a discovery document is 422 SSO_DISCOVERY_FAILED; a member may not configure; DELETE removes', async () => {
      const owner = await control.signUp();
      expectError(await control.request('PUT', '/account/sso', { token: owner.token, body: settings({ issuer_url: 'http://127.0.0.1:9/nothing' }) }), 422, 'SSO_DISCOVERY_FAILED', ['body', 'issuer_url']);
      expectError(await control.request('GET', '/account/sso', { token: owner.token }), 404, 'NOT_FOUND');
      const member = await signUpMember(control, owner.user.account_id, 'admin');
      expectError(await control.request('PUT', '/account/sso', { token: member.token, body: settings() }), 403, 'AUTHORISATION_DENIED');
      expectStatus(await control.request('PUT', '/account/sso', { token: owner.token, body: settings() }), 200);
      expectStatus(await control.request('DELETE', '/account/sso', { token: owner.token }), 204);
      expectError(await control.request('GET', '/account/sso', { token: owner.token }), 404, 'NOT_FOUND');
      assert.equal((await auditEvents(control, owner.token, 'action=sso.delete')).length, 1);
    });

    it('master-key rotation re-seals the client secret', async () => {
      const { accountId } = await ssoAccount();
      const newKey = randomBytes(32);
      const rotated = new SecretBox([newKey, ...control.config.masterKeys]);
      await new KeyRotation(control.db, rotated, async () => {}).rotate({ batchSize: 100 });
      const row = await control.db('account_sso').where({ account_id: accountId }).first();
      assert.ok(rotated.isCurrent(row.client_secret_sealed), 'under the new key');
      assert.equal(new SecretBox([newKey]).open(row.client_secret_sealed), provider.clientSecret);
    });
  });

  describe('sign-in', () => {
    it('signs in an existing member (same email, any case) with a session marked sso', async () => {
      const { slug, accountId } = await ssoAccount();
      const member = await control.signUp({ invite_code: await inviteFor(accountId, 'member'), email: emailOf('member').toUpperCase() });
      const grant = await exchange((await signInAt(slug, 'member')).callback);
      expectStatus(grant, 200);
      assert.equal(grant.body.user.id, member.user.id);
      assert.match(grant.body.token, /^ses_/);
      const me = await control.request('GET', '/auth/me', { token: grant.body.token });
      expectStatus(me, 200);
      assert.equal(me.body.role, 'member');
      const sessions = await control.db('sessions').where({ user_id: member.user.id }).select('method');
      assert.deepEqual(sessions.map((s) => s.method).sort(), ['password', 'sso']);
    });

    it('creates a user of an allowed domain with the default role (viewer: cannot create an agent)', async () => {
      const { slug, accountId } = await ssoAccount({ default_role: 'viewer' });
      const grant = await exchange((await signInAt(slug, 'ada')).callback);
      expectStatus(grant, 200);
      const me = await control.request('GET', '/auth/me', { token: grant.body.token });
      assert.equal(me.body.email, emailOf('ada'));
      assert.equal(me.body.role, 'viewer');
      assert.equal(me.body.account_id, accountId);
      const created = await control.request('POST', '/agents', { token: grant.body.token, body: { name: 'viewer agent' } });
      expectError(created, 403, 'AUTHORISATION_DENIED');
    });

    it('refuses a user whose email domain is not allowed: 403 SSO_DOMAIN_NOT_ALLOWED, nobody created', async () => {
      const { slug } = await ssoAccount();
      await expectRefused((await signInAt(slug, 'outsider')).callback, 403, 'SSO_DOMAIN_NOT_ALLOWED');
      assert.equal(await control.db('users').whereRaw('lower(email) = lower(?)', [emailOf('outsider', 'elsewhere.test')]).first(), undefined);
    });

    // What openid-client says it refused, as the control API logs it: each tampering is caught by its own check.
    const reasons = { bad_signature: /signature/i, wrong_nonce: /nonce/i, expired: /"exp"|expired|timestamp/i } as const;
    for (const tamper of ['bad_signature', 'wrong_nonce', 'expired'] as const) {
      it(`refuses an ID token with ${tamper.replace('_', ' ')} (400 SSO_SIGN_IN_FAILED), though the provider answered`, async () => {
        const { slug } = await ssoAccount();
        const before = { tokens: provider.tokenResponses, log: logged.length };
        provider.tamperNext(tamper);
        const { callback } = await signInAt(slug, 'tamper');
        assert.equal(provider.tokenResponses, before.tokens + 1, 'the code was traded and the token rewritten');
        await expectRefused(callback, 400, 'SSO_SIGN_IN_FAILED');
        assert.equal(await control.db('users').where({ email: emailOf('tamper') }).first(), undefined);
        const refusal = logged.slice(before.log).split('\n').find((line) => line.includes('SSO callback refused'));
        assert.ok(refusal, 'the refusal is logged');
        assert.match(JSON.parse(refusal).reason, reasons[tamper]);
      });
    }

    it('takes a state once: the callback replayed is 400, and so is a one-time code traded twice', async () => {
      const { slug } = await ssoAccount();
      const client = browser();
      const { callback, callbackUrl } = await signInAt(slug, 'replay', client);
      const code = new URLSearchParams(new URL(callback.headers.get('location')!).hash.slice(1)).get('code')!;
      await expectRefused(await client.fetch(callbackUrl), 400, 'SSO_SIGN_IN_FAILED');
      expectStatus(await control.request('POST', '/auth/sso/exchange', { body: { code } }), 200);
      expectError(await control.request('POST', '/auth/sso/exchange', { body: { code } }), 400, 'SSO_SIGN_IN_FAILED');
    });

    it('start takes only a loopback redirect_uri, and answers 404 for an unknown slug', async () => {
      const { slug } = await ssoAccount();
      for (const redirect of ['https://evil.example/cb', 'http://localhost:9999/cb', 'http://127.0.0.1/cb']) {
        expectError(await control.request('GET', `/auth/sso/${slug}/start?redirect_uri=${encodeURIComponent(redirect)}`), 422, 'VALIDATION_ERROR', ['query', 'redirect_uri']);
      }
      const ok = await fetch(`${control.baseUrl}/auth/sso/${slug}/start?redirect_uri=${encodeURIComponent('http://[::1]:4711/cb')}`, { redirect: 'manual' });
      assert.equal(ok.status, 302);
      const authorize = new URL(ok.headers.get('location')!);
      assert.equal(authorize.origin, provider.issuer);
      assert.equal(authorize.searchParams.get('code_challenge_method'), 'S256');
      assert.equal(authorize.searchParams.get('redirect_uri'), CALLBACK);
      assert.ok(authorize.searchParams.get('state') && authorize.searchParams.get('nonce'));
      expectError(await control.request('GET', '/auth/sso/no-such-account/start'), 404, 'NOT_FOUND');
      // A malformed slug names no account either: 404, as any path id no one has.
      expectError(await control.request('GET', '/auth/sso/Not_A_Slug/start'), 404, 'NOT_FOUND');
    });
  });

  it('refuses a flood of sign-in starts from one address with 429 before anything is stored, and lets it start again in the next minute', async () => {
    const limited = await startControl({ PUBLIC_API_URL: PUBLIC, SSO_ALLOW_INSECURE_ISSUERS: 'true', SSO_START_RATE_LIMIT_PER_MINUTE: '3' });
    try {
      const owner = await limited.signUp();
      const slug = `acme-${randomBytes(4).toString('hex')}`;
      expectStatus(await limited.request('PUT', '/account/sso', { token: owner.token, body: settings({ slug }) }), 200);
      // Mid-minute by the control API's clock, which counts the windows.
      limited.clock.set(new Date(Math.floor(Date.now() / 60_000) * 60_000 + 20_000));
      const start = (path: string) => fetch(`${limited.baseUrl}/auth/sso/${path}/start`, { redirect: 'manual' });
      for (let i = 1; i <= 3; i += 1) assert.equal((await start(slug)).status, 302, `start ${i}`);
      const refused = await start(slug);
      assert.equal(refused.status, 429);
      assert.equal(((await refused.json()) as { code: string }).code, 'RATE_LIMIT_EXCEEDED');
      assert.ok(Number(refused.headers.get('retry-after')) > 0 && Number(refused.headers.get('retry-after')) <= 60, refused.headers.get('retry-after') ?? 'no Retry-After');
      // Counted before the slug is looked up: probing for accounts is refused alike.
      assert.equal((await start('no-such-account')).status, 429);
      assert.equal(Number((await limited.db('sso_logins').count({ n: '*' }))[0]!.n), 3, 'only the allowed starts stored a pending sign-in');
      limited.clock.advance(60_000);
      assert.equal((await start(slug)).status, 302, 'the next minute');
    } finally {
      await limited.close();
    }
  });

  describe('when SSO is required', () => {
    it("refuses members' password sign-in, password sessions and their API keys (403 SSO_REQUIRED); the owner's break-glass works and is audited", async () => {
      const { owner, slug, accountId } = await ssoAccount();
      const member = await control.signUp({ invite_code: await inviteFor(accountId, 'member'), email: emailOf('required') });
      const passwordKey = await control.request('POST', '/api-keys', { token: member.token, body: { label: 'from a password session' } });
      expectStatus(passwordKey, 201);
      const ownerKey = await control.request('POST', '/api-keys', { token: owner.token, body: { label: 'owner' } });
      const ssoGrant = await exchange((await signInAt(slug, 'required')).callback);
      const ssoKey = await control.request('POST', '/api-keys', { token: ssoGrant.body.token, body: { label: 'from an SSO session' } });
      expectStatus(ssoKey, 201);

      expectStatus(await control.request('PUT', '/account/sso', { token: owner.token, body: settings({ slug, required: true }) }), 200);

      expectError(await control.request('POST', '/auth/login', { body: { email: member.user.email, password: member.password } }), 403, 'SSO_REQUIRED');
      expectError(await control.request('GET', '/agents', { token: member.token }), 403, 'SSO_REQUIRED');
      expectError(await control.request('GET', '/agents', { token: passwordKey.body.key }), 403, 'SSO_REQUIRED');
      expectStatus(await control.request('GET', '/agents', { token: ssoKey.body.key }), 200);
      expectStatus(await control.request('GET', '/agents', { token: ssoGrant.body.token }), 200);
      expectStatus(await control.request('GET', '/agents', { token: ownerKey.body.key }), 200);

      const glass = await control.request('POST', '/auth/login', { body: { email: owner.user.email, password: owner.password } });
      expectStatus(glass, 200);
      const events = await auditEvents(control, glass.body.token, 'action=auth.break_glass');
      assert.equal(events.length, 1);
      assert.equal(events[0].target.id, owner.user.id);
      assert.equal(events[0].request_id, glass.headers.get('x-request-id'));

      // Not required any more: the member's password works again.
      expectStatus(await control.request('PUT', '/account/sso', { token: glass.body.token, body: settings({ slug, required: false }) }), 200);
      expectStatus(await control.request('POST', '/auth/login', { body: { email: member.user.email, password: member.password } }), 200);
    });

    it("ends a member's open stream of a password session within seconds (sso_required), and keeps the stream of their SSO session", async () => {
      const { owner, slug, accountId } = await ssoAccount();
      const member = await control.signUp({ invite_code: await inviteFor(accountId, 'member'), email: emailOf('streams') });
      const ssoGrant = await exchange((await signInAt(slug, 'streams')).callback);
      const agent = await createAgent(control, owner.token);
      const metrics = `${control.baseUrl}/agents/${agent.id}/metrics/stream?interval=1`;
      const streamOf = (token: string) => SseReader.open(metrics, { Authorization: `Bearer ${token}` });
      const [byPassword, bySso] = [await streamOf(member.token), await streamOf(ssoGrant.body.token)];
      try {
        assert.deepEqual([byPassword.status, bySso.status], [200, 200], byPassword.body + bySso.body);

        expectStatus(await control.request('PUT', '/account/sso', { token: owner.token, body: settings({ slug, required: true }) }), 200);
        // Nothing announces it: the streams' re-check (every 2 s) finds it.
        await byPassword.ends(10_000);
        const last = byPassword.frames.at(-1);
        assert.equal(last?.event, 'access-ended', JSON.stringify(byPassword.frames));
        assert.deepEqual(JSON.parse(last!.data), { reason: 'sso_required' });
        const reopened = await streamOf(member.token);
        reopened.close();
        assert.equal(reopened.status, 403, reopened.body);

        const seen = bySso.frames.length;
        await bySso.next('a sample after the requirement', (frame) => frame.event === 'metrics', 5_000, seen);
        assert.equal(bySso.ended, false);
        assert.ok(!bySso.frames.some((frame) => frame.event === 'access-ended'), JSON.stringify(bySso.frames));
      } finally {
        byPassword.close();
        bySso.close();
      }
    });
  });

  // Last: the log read for the client secret holds every sign-in above.
  describe('CLI and secrets', () => {
  it('agentctl login --sso receives the code on a loopback address and keeps the session', async () => {
    const { slug } = await ssoAccount({ default_role: 'member' });
    const user = new CliUser({ AGENTCTL_API_URL: control.baseUrl });
    const child = user.start(['login', '--sso', slug, '--no-browser']);
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk));
    const printed = await new Promise<string>((resolve, reject) => {
      child.stderr!.on('data', (chunk: Buffer) => {
        stderr += chunk;
        const url = /^(http:\/\/\S+\/auth\/sso\/\S+\/start\?\S+)$/m.exec(stderr)?.[1];
        if (url) resolve(url);
      });
      child.on('close', (code) => reject(new Error(`agentctl ended (${code}) before printing the URL: ${stderr}`)));
    });
    const client = browser();
    const callback = await client.fetch(await client.throughProvider(printed, 'cli'));
    assert.equal(callback.status, 302);
    const loopback = callback.headers.get('location')!;
    assert.match(loopback, /^http:\/\/127\.0\.0\.1:\d+\/callback\?code=ssoc_/);
    const page = await fetch(loopback);
    assert.equal(page.status, 200);
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    assert.equal(code, 0, stderr);
    assert.match(stdout, new RegExp(`Signed in as ${emailOf('cli')}`));
    const whoami = await user.run(['whoami', '--json']);
    assert.equal(whoami.code, 0, whoami.stderr);
    assert.equal(JSON.parse(whoami.stdout).email, emailOf('cli'));
    assert.ok(!stdout.includes('ses_') && !stderr.includes('ses_'), 'the session token is never printed');
  });

  it('never shows the client secret in an answer or a log line', async () => {
    const { owner } = await ssoAccount();
    const answers = [
      await control.request('GET', '/account/sso', { token: owner.token }),
      await control.request('PUT', '/account/sso', { token: owner.token, body: settings() }),
      await control.request('GET', '/account/audit-events', { token: owner.token }),
    ];
    for (const answer of answers) assert.ok(!JSON.stringify(answer.body).includes(provider.clientSecret));
    assert.ok(logged.length > 0, 'the log was captured');
    assert.ok(!logged.includes(provider.clientSecret), 'the client secret is in no log line');
    assert.ok(!(await databaseText(control.db)).includes(provider.clientSecret), 'nor stored in the clear');
  });
  });

  const inviteFor = (accountId: string, role: string) => createInvite(control.db, accountId, role);
});
