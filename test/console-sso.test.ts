import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createServer, connect, type Server } from 'node:net';
import type { AddressInfo } from 'node:net';
import type { Browser, Page } from 'playwright-core';
import { buildConsole, launchChromium } from './support/browser.js';
import { startControl, type TestControl } from './support/control-harness.js';
import { expectStatus } from './support/control-api.js';
import { startIdentityProvider, type TestIdentityProvider } from './support/sso-provider.js';

/**
 * "Continue with SSO" in Chromium, against oidc-provider. The control API's public address
 * (PUBLIC_API_URL) must be known before it starts on port 0, so it is a relay on a port of
 * its own that passes every connection through to the control API once it listens.
 */
describe('the web console: single sign-on', function () {
  this.timeout(90_000);
  let relay: Server;
  let publicUrl: string;
  let provider: TestIdentityProvider;
  let control: TestControl;
  let browser: Browser;
  let page: Page;
  const email = `console-${randomBytes(3).toString('hex')}@acme.test`;

  before(async () => {
    buildConsole();
    let controlPort = 0;
    relay = createServer((socket) => {
      const upstream = connect(controlPort, '127.0.0.1');
      socket.on('error', () => upstream.destroy());
      upstream.on('error', () => socket.destroy());
      socket.pipe(upstream).pipe(socket);
    });
    await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', resolve));
    publicUrl = `http://localhost:${(relay.address() as AddressInfo).port}`;
    provider = await startIdentityProvider(`${publicUrl}/v1/auth/sso/callback`, { pat: { email, name: 'Pat Console' } });
    control = await startControl({ PUBLIC_API_URL: publicUrl, SSO_ALLOW_INSECURE_ISSUERS: 'true' });
    controlPort = Number(new URL(control.baseUrl).port);
    browser = await launchChromium();
    page = await browser.newPage();
  });
  after(async () => {
    await browser?.close();
    await control?.close();
    await provider?.close();
    relay?.close();
  });

  it('signs a new user of an allowed domain in from the sign-in page, with the default role', async () => {
    const owner = await control.signUp();
    const slug = `console-${randomBytes(4).toString('hex')}`;
    expectStatus(await control.request('PUT', '/account/sso', {
      token: owner.token,
      body: { issuer_url: provider.issuer, client_id: provider.clientId, client_secret: provider.clientSecret, allowed_email_domains: ['acme.test'], default_role: 'member', required: false, slug },
    }), 200);

    await page.goto(`${publicUrl}/`);
    await page.getByLabel('Account SSO name').fill(slug);
    await page.getByRole('button', { name: 'Continue with SSO' }).click();
    // oidc-provider's own pages: its login form (any password), then consent.
    await page.locator('input[name="login"]').fill('pat');
    await page.locator('input[name="password"]').fill('any password');
    await page.getByRole('button', { name: 'Sign-in' }).click();
    await page.getByRole('button', { name: 'Continue' }).click();

    await page.getByRole('button', { name: 'Sign out' }).waitFor();
    assert.equal(page.url(), `${publicUrl}/agents`, 'the one-time code is gone from the address');
    const token = await page.evaluate(() => sessionStorage.getItem('agent-platform.session'));
    const me = await control.request('GET', '/auth/me', { token: token! });
    expectStatus(me, 200);
    assert.equal(me.body.email, email);
    assert.equal(me.body.role, 'member');
    assert.equal(me.body.account_id, owner.user.account_id);
  });
});
