import assert from 'node:assert/strict';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { buildConsole, launchChromium, openAgentTab } from './support/browser.js';
import { startControl, type TestControl } from './support/control-harness.js';
import { createAgent } from './support/control-api.js';

/** The agent page's Domains tab in real Chromium: add, the TXT record with copy buttons, the status as it moves, delete. */
describe('the web console: custom domains', function () {
  this.timeout(120_000);
  let control: TestControl;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let root: string;

  before(async () => {
    buildConsole();
    control = await startControl({});
    root = control.baseUrl.replace(/\/v1$/, '');
    browser = await launchChromium();
    context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: root });
    page = await context.newPage();
  });
  after(async () => {
    await browser?.close();
    await control?.close();
  });

  it('adds a domain, shows and copies its TXT record, follows its status to active, and deletes it', async () => {
    const { token } = await control.signUp();
    const agent = await createAgent(control, token, { name: 'site' });
    await openAgentTab(page, root, token, agent.id, 'Domains');
    await page.getByText('No custom domains.').waitFor();

    await page.getByLabel('Hostname').fill('shop.example.com');
    await page.getByRole('button', { name: 'Add domain' }).click();
    const item = page.getByRole('listitem', { name: 'shop.example.com' });
    await item.getByText('waiting for the TXT record').waitFor();
    // Exact: the reason the worker writes names the record too.
    await item.getByText('_agent-platform.shop.example.com', { exact: true }).waitFor();
    const [domain] = (await control.request('GET', `/agents/${agent.id}/domains`, { token })).body.domains;
    await item.getByText(domain.verification.value).waitFor();

    await page.getByRole('button', { name: 'Copy the TXT record value of shop.example.com' }).click();
    assert.equal(await page.evaluate(() => navigator.clipboard.readText()), domain.verification.value);
    await page.getByRole('button', { name: 'Copy the TXT record name of shop.example.com' }).click();
    assert.equal(await page.evaluate(() => navigator.clipboard.readText()), '_agent-platform.shop.example.com');

    // The worker looks at once, through the test control's DNS_RESOLVER (which refuses every
    // lookup): the page, polling while the domain is not settled, shows the reason it is still waiting.
    await item.getByText('the DNS lookup of _agent-platform.shop.example.com failed: ECONNREFUSED').waitFor({ timeout: 10_000 });
    await item.getByText('waiting for the TXT record').waitFor();

    // The rest of the worker's part (a certificate from a CA), done by hand once its first look is written.
    await control.db('agent_domains').where({ id: domain.id }).update({ status: 'active', reason: null, certificate_serial: '01', certificate_not_before: new Date(), certificate_not_after: new Date(Date.now() + 90 * 86_400_000), renew_after: new Date(Date.now() + 60 * 86_400_000) });
    await item.getByText('active', { exact: true }).waitFor({ timeout: 10_000 });
    assert.equal(await item.getByText('TXT record name').count(), 0, 'an active domain needs no record shown');

    await page.getByRole('button', { name: 'Delete shop.example.com' }).click();
    await page.getByText('No custom domains.').waitFor();
    assert.deepEqual((await control.request('GET', `/agents/${agent.id}/domains`, { token })).body.domains, []);
  });
});
