import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { accessibilityProblems } from './support/accessibility.js';
import { buildConsole, launchChromium, openSignedIn } from './support/browser.js';
import { startControl, type TestControl } from './support/control-harness.js';
import { createAgent, expectStatus, signUpMember } from './support/control-api.js';
import { startIdentityProvider, type TestIdentityProvider } from './support/sso-provider.js';

const DESKTOP = { width: 1280, height: 800 };
const PHONE = { width: 375, height: 740 };

/**
 * The console's side of teams and single sign-on (issue 39) in real Chromium: the Team page,
 * accepting an invite by its link, the account switcher, the SSO return page with a bad code,
 * and the owner's SSO settings. test/teams.test.ts and test/sso.test.ts cover the API behind
 * them; test/console-sso.test.ts signs in through a real identity provider.
 */
describe('the web console: team and single sign-on', function () {
  this.timeout(120_000);
  let control: TestControl;
  let browser: Browser;
  let root: string;
  /** Every context a test opened, closed after it. */
  const contexts: BrowserContext[] = [];

  before(async () => {
    buildConsole();
    control = await startControl({});
    root = control.baseUrl.replace(/\/v1$/, '');
    browser = await launchChromium();
  });
  afterEach(async () => {
    for (const context of contexts.splice(0)) await context.close();
  });
  after(async () => {
    await browser?.close();
    await control?.close();
  });

  /** A fresh browser (no storage shared with another), signed in with `token` when given, at `path` of `origin`. */
  async function openPage(path: string, token?: string, origin = root): Promise<Page> {
    const context = await browser.newContext({ viewport: DESKTOP });
    contexts.push(context);
    const page = await context.newPage();
    if (token) await openSignedIn(page, origin, token, path);
    else await page.goto(`${origin}${path}`);
    return page;
  }

  async function assertAccessible(page: Page, where: string): Promise<void> {
    for (const viewport of [DESKTOP, PHONE]) {
      await page.setViewportSize(viewport);
      assert.deepEqual(await accessibilityProblems(page), [], `${where} at ${viewport.width} px`);
    }
    await page.setViewportSize(DESKTOP);
  }

  const uniqueEmail = (name: string) => `${name}-${randomBytes(4).toString('hex')}@example.com`;

  /** Invites `email` as `role` from the Team page; the link the page shows once. */
  async function inviteFromPage(page: Page, email: string, role: string): Promise<string> {
    const form = page.getByRole('form', { name: 'Invite a colleague' });
    assert.equal(await form.getByLabel('Role').inputValue(), 'member', 'offered first: the role most invites are for');
    await form.getByLabel('Email').fill(email);
    await form.getByLabel('Role').selectOption(role);
    await form.getByRole('button', { name: 'Invite' }).click();
    await page.getByRole('status').getByText(`${email} invited as ${role}.`).waitFor();
    assert.equal(await form.getByLabel('Email').inputValue(), '', 'the form is ready for the next colleague');
    return page.locator('.once code').innerText();
  }

  const membersTable = (page: Page) => page.getByRole('table', { name: 'Members' });
  const memberRow = (page: Page, email: string) => membersTable(page).getByRole('row').filter({ hasText: email });
  const accountUsers = async (token: string) => {
    const response = await control.request('GET', '/account/users', { token });
    expectStatus(response, 200);
    return response.body.users as { id: string; email: string; role: string }[];
  };

  it("an owner invites a colleague as viewer; the colleague registers through the link, sees the account's agents and cannot deploy; the owner changes their role, then removes them", async () => {
    const owner = await control.signUp();
    await createAgent(control, owner.token, { name: 'shared agent' });
    const email = uniqueEmail('colleague');

    const ownerPage = await openPage('/team', owner.token);
    await memberRow(ownerPage, owner.user.email).waitFor();
    await ownerPage.getByText('No pending invites.').waitFor();
    await assertAccessible(ownerPage, 'the team page');
    const link = await inviteFromPage(ownerPage, email, 'viewer');
    assert.match(link, new RegExp(`^${root}/invites#invite_[0-9A-Za-z]+$`), 'an address the colleague opens as it is');
    await ownerPage.getByRole('list', { name: 'Pending invites' }).getByText(email).waitFor();
    await assertAccessible(ownerPage, 'the team page with the new link');

    // The colleague, in a browser of their own, registers through the link.
    const colleaguePage = await openPage(link.slice(root.length));
    await colleaguePage.getByRole('heading', { name: 'Join an account' }).waitFor();
    await assertAccessible(colleaguePage, 'the invite page');
    await colleaguePage.getByLabel('Name').fill('Grace');
    await colleaguePage.getByLabel('Password').fill('correct horse battery');
    await colleaguePage.getByRole('button', { name: 'Join' }).click();
    await colleaguePage.getByRole('link', { name: 'shared agent' }).waitFor();
    assert.equal(new URL(colleaguePage.url()).pathname, '/agents');
    await colleaguePage.goBack();
    await colleaguePage.getByText('This link has no invite in it', { exact: false }).waitFor();
    assert.equal(new URL(colleaguePage.url()).hash, '', 'the used secret is gone from the history');
    await colleaguePage.goForward();
    await colleaguePage.getByRole('link', { name: 'shared agent' }).waitFor();
    assert.equal(await colleaguePage.getByRole('button', { name: 'New agent' }).count(), 0, 'a viewer is offered no agent to create');

    // A viewer's deploy is refused by the API, and the page says so where it was asked.
    await colleaguePage.getByRole('link', { name: 'shared agent' }).click();
    await colleaguePage.getByRole('group', { name: 'Deploy' }).getByRole('button', { name: 'Deploy' }).click();
    const refusal = colleaguePage.getByRole('group', { name: 'Deploy' }).getByRole('alert');
    await refusal.waitFor();
    assert.match(await refusal.innerText(), /viewer role may read but not change/);
    // Nor does a viewer see the team: the page says who may.
    await colleaguePage.getByRole('link', { name: 'Team' }).click();
    await colleaguePage.getByText('You are a viewer of this account', { exact: false }).waitFor();
    assert.equal(await membersTable(colleaguePage).count(), 0);

    // The owner's page shows the colleague once reloaded, and the invite is no longer pending.
    await ownerPage.reload();
    const row = memberRow(ownerPage, email);
    await row.waitFor();
    await ownerPage.getByText('No pending invites.').waitFor();
    const colleague = (await accountUsers(owner.token)).find((user) => user.email === email)!;
    assert.equal(colleague.role, 'viewer');

    await row.getByLabel(`Role of ${email}`).selectOption('member');
    await ownerPage.getByRole('status').getByText(`${email} is now member.`).waitFor();
    assert.equal((await accountUsers(owner.token)).find((user) => user.email === email)?.role, 'member');

    // The last owner cannot step down: the API's refusal is shown and the choice goes back.
    await memberRow(ownerPage, owner.user.email).getByLabel(`Role of ${owner.user.email}`).selectOption('admin');
    await ownerPage.getByRole('alert').waitFor();
    assert.equal(await memberRow(ownerPage, owner.user.email).getByLabel(`Role of ${owner.user.email}`).inputValue(), 'owner');

    await row.getByRole('button', { name: `Remove ${email}` }).click();
    await ownerPage.getByRole('group', { name: `Confirm removing ${email}` }).getByRole('button', { name: 'Yes, remove' }).click();
    await row.waitFor({ state: 'detached' });
    await ownerPage.getByRole('status').getByText(`${email} removed from the account.`).waitFor();
    assert.deepEqual((await accountUsers(owner.token)).map((user) => user.email), [owner.user.email]);
  });

  it('revokes a pending invite: its link is refused from then on', async () => {
    const owner = await control.signUp();
    const email = uniqueEmail('changed-mind');
    const page = await openPage('/team', owner.token);
    const link = await inviteFromPage(page, email, 'member');
    await page.getByRole('button', { name: `Revoke the invite of ${email}` }).click();
    await page.getByRole('status').getByText(`The invite of ${email} revoked.`).waitFor();
    await page.getByText('No pending invites.').waitFor();

    const invited = await openPage(link.slice(root.length));
    await invited.getByLabel('Name').fill('Late');
    await invited.getByLabel('Password').fill('correct horse battery');
    await invited.getByRole('button', { name: 'Join' }).click();
    await invited.getByRole('alert').getByText('No such invite', { exact: false }).waitFor();
  });

  it('a signed-in user of another account accepts, switches to it, and back to their own with the header', async () => {
    const owner = await control.signUp();
    await createAgent(control, owner.token, { name: 'team agent' });
    const other = await control.signUp();
    await createAgent(control, other.token, { name: 'own agent' });
    const created = await control.request('POST', '/account/invites', { token: owner.token, body: { email: other.user.email, role: 'member' } });
    expectStatus(created, 201);

    const link = new URL(created.body.link, root);
    const page = await openPage(`${link.pathname}${link.hash}`, other.token);
    await page.getByRole('button', { name: 'Accept the invite' }).click();
    await page.getByRole('link', { name: 'team agent' }).waitFor();
    assert.equal(await page.getByRole('link', { name: 'own agent' }).count(), 0);
    const switcher = page.getByRole('combobox', { name: 'Account' });
    assert.equal(await switcher.inputValue(), owner.user.account_id);
    await assertAccessible(page, 'the agents page with the account switcher');

    // The choice survives a reload, as the session does.
    await page.reload();
    await page.getByRole('link', { name: 'team agent' }).waitFor();

    await switcher.selectOption(other.user.account_id);
    await page.getByRole('link', { name: 'own agent' }).waitFor();
    assert.equal(await page.getByRole('link', { name: 'team agent' }).count(), 0);
    // Their own account, where they are the owner: the Team page lists its one member.
    await page.getByRole('link', { name: 'Team' }).click();
    await memberRow(page, other.user.email).waitFor();

    // Back in the team's account, then removed from it: the refused choice falls back to their own account.
    await switcher.selectOption(owner.user.account_id);
    await page.getByRole('link', { name: 'team agent' }).waitFor();
    expectStatus(await control.request('DELETE', `/account/users/${other.user.id}`, { token: owner.token }), 204);
    await page.reload();
    await page.getByRole('link', { name: 'own agent' }).waitFor();
    await switcher.waitFor({ state: 'detached' });
    assert.equal(await page.evaluate(() => sessionStorage.getItem('agent-platform.account')), null);
  });

  it('offers an admin every role but owner, and shows a member that only owners and admins manage the team', async () => {
    const owner = await control.signUp();
    const admin = await signUpMember(control, owner.user.account_id, 'admin');
    const member = await signUpMember(control, owner.user.account_id, 'member');

    const adminPage = await openPage('/team', admin.token);
    const roles = adminPage.getByRole('form', { name: 'Invite a colleague' }).getByLabel('Role');
    await roles.waitFor();
    assert.deepEqual(await roles.locator('option').allInnerTexts(), ['admin', 'member', 'viewer']);
    assert.equal(await adminPage.getByRole('button', { name: /^Remove / }).count(), 0, 'only owners remove users');
    assert.equal(await adminPage.getByRole('heading', { name: 'Single sign-on' }).count(), 0, 'only owners configure SSO');

    const memberPage = await openPage('/team', member.token);
    await memberPage.getByText('You are a member of this account', { exact: false }).waitFor();
    assert.equal(await memberPage.getByRole('form', { name: 'Invite a colleague' }).count(), 0);
  });

  it('the SSO return page shows the refusal of a code that is not valid, and signs nobody in', async () => {
    const page = await openPage('/sso#code=ssoc_not-a-real-code');
    await page.getByRole('alert').waitFor();
    assert.match(await page.getByRole('alert').innerText(), /code/i, "the API's message");
    assert.equal(await page.evaluate(() => sessionStorage.getItem('agent-platform.session')), null);
    assert.doesNotMatch(page.url(), /ssoc_/, 'the code is wiped from the address bar');
    await assertAccessible(page, 'the SSO return page');
  });

  describe("an owner's single sign-on settings", () => {
    /** SSO needs PUBLIC_API_URL, which makes invite links absolute: a control API of its own. */
    let ssoControl: TestControl;
    let provider: TestIdentityProvider;
    before(async () => {
      provider = await startIdentityProvider('http://control.sso.test/v1/auth/sso/callback', {});
      ssoControl = await startControl({ PUBLIC_API_URL: 'http://control.sso.test', SSO_ALLOW_INSECURE_ISSUERS: 'true' });
    });
    after(async () => {
      await ssoControl?.close();
      await provider?.close();
    });

    it('saves them from the Team page, never shows the client secret back, and removes them', async () => {
      const owner = await ssoControl.signUp();
      const slug = `acme-${randomBytes(4).toString('hex')}`;
      const page = await openPage('/team', owner.token, ssoControl.baseUrl.replace(/\/v1$/, ''));
      const form = page.getByRole('form', { name: 'Single sign-on settings' });
      await form.getByLabel('SSO name').fill(slug);
      await form.getByLabel('Issuer URL').fill(provider.issuer);
      await form.getByLabel('Client id').fill(provider.clientId);
      await form.getByLabel('Client secret').fill(provider.clientSecret);
      await form.getByLabel('Allowed email domains').fill('acme.test, example.com');
      await form.getByLabel('Role of a user created at first sign-in').selectOption('viewer');
      await form.getByRole('button', { name: 'Save single sign-on' }).click();
      await page.getByRole('status').getByText('Single sign-on saved.').waitFor();

      await form.getByLabel('Client secret (set; enter it again to save)').waitFor();
      assert.equal(await form.getByLabel('Client secret', { exact: false }).inputValue(), '');
      await page.getByText(`http://control.sso.test/v1/auth/sso/${slug}/start`).waitFor();
      const saved = await ssoControl.request('GET', '/account/sso', { token: owner.token });
      expectStatus(saved, 200);
      assert.deepEqual([saved.body.slug, saved.body.client_id, saved.body.allowed_email_domains, saved.body.default_role, saved.body.client_secret_set], [slug, provider.clientId, ['acme.test', 'example.com'], 'viewer', true]);
      assert.doesNotMatch(await page.content(), new RegExp(provider.clientSecret), 'the secret is nowhere in the page');
      await assertAccessible(page, 'the team page with single sign-on');

      // Reloaded, the form shows the saved settings, the secret only as set.
      await page.reload();
      await form.getByLabel('Client secret (set; enter it again to save)').waitFor();
      assert.equal(await form.getByLabel('SSO name').inputValue(), slug);
      assert.equal(await form.getByLabel('Role of a user created at first sign-in').inputValue(), 'viewer');

      await page.getByRole('button', { name: 'Remove single sign-on' }).click();
      await page.getByRole('group', { name: 'Confirm removing single sign-on' }).getByRole('button', { name: 'Yes, remove' }).click();
      await page.getByRole('status').getByText('Single sign-on removed', { exact: false }).waitFor();
      expectStatus(await ssoControl.request('GET', '/account/sso', { token: owner.token }), 404);
    });
  });
});
