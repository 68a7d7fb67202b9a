import assert from 'node:assert/strict';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { createRequestFigureRecorder } from '../contract/request-figure-recorder.js';
import { accessibilityProblems } from './support/accessibility.js';
import { buildConsole, launchChromium, openAgentTab } from './support/browser.js';
import { startControl, type TestControl } from './support/control-harness.js';
import { createAgent, expectStatus } from './support/control-api.js';
import { runReplica } from './support/in-memory-driver.js';
import { waitFor } from './support/wait.js';

/**
 * The Deployments tab's canary panel (issue 36) in real Chromium, on the in-memory driver:
 * the share, both versions' figures side by side (refreshed while it shows), the settings,
 * the preview URL with its copy button, and Promote / Abort after confirmation, each ending
 * the panel. test/canary-api.test.ts covers the API behind it.
 */
describe('the web console: canary deploys', function () {
  this.timeout(120_000);
  const DESKTOP = { width: 1280, height: 800 };
  const PHONE = { width: 375, height: 740 };
  let control: TestControl;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let root: string;
  let nextPort = 21_000;

  before(async () => {
    buildConsole();
    control = await startControl({});
    root = control.baseUrl.replace(/\/v1$/, '');
    browser = await launchChromium();
    context = await browser.newContext({ viewport: DESKTOP });
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: root });
    page = await context.newPage();
  });
  after(async () => {
    await browser?.close();
    await control?.close();
  });

  /**
   * A signed-in page on the Deployments tab of an agent whose second deployment is a canary
   * serving `percent`% (its first rolled out on one replica; the in-memory driver runs the canary's).
   */
  async function servingCanary(percent: number) {
    // An account each: the free plan's 3 replicas hold one test's agent, both versions counted.
    const { token } = await control.signUp();
    const created = await createAgent(control, token, { access: 'public', deploy: { replicas: 1 } });
    const agent = { ...created, slug: new URL(created.url).hostname.split('.')[0]! };
    const latest = async () => (await control.request('GET', `/agents/${agent.id}/deployments`, { token })).body.deployments[0];
    await runReplica(control, agent, `10.9.1.1:${(nextPort += 2)}`);
    await waitFor('the first deployment to succeed', async () => ((await latest()).status === 'succeeded' ? true : undefined));
    const deployed = await control.request('POST', `/agents/${agent.id}/deploy`, { token, body: { env: [{ key: 'VERSION', value: 'two' }], strategy: { type: 'canary', percent } } });
    expectStatus(deployed, 202);
    const canary = await waitFor('the canary to serve', async () => {
      const shown = await latest();
      return shown.phase === 'canary' ? shown : undefined;
    });
    await openAgentTab(page, root, token, agent.id, 'Deployments');
    const panel = page.getByRole('region', { name: `Canary: deployment #${canary.number}` });
    await panel.waitFor();
    const deployment = async () => (await control.request('GET', `/agents/${agent.id}/deployments/${canary.id}`, { token })).body;
    return { agent, canary, panel, deployment };
  }

  it('shows the share, the figures side by side (refreshed), the settings and the preview URL; Promote, after confirmation, ends the canary', async () => {
    const { agent, canary, panel, deployment } = await servingCanary(10);
    assert.equal(await panel.locator('[data-canary-share]').innerText(), '10%');
    await page.getByRole('row').filter({ has: page.getByRole('cell', { name: String(canary.number), exact: true }) }).getByText('canary 10%').waitFor();
    await panel.getByText(canary.canary.preview_url, { exact: true }).waitFor();
    await panel.getByRole('button', { name: 'Copy the preview URL' }).click();
    assert.equal(await page.evaluate(() => navigator.clipboard.readText()), canary.canary.preview_url);
    await panel.getByText('off (promote by hand)').waitFor();
    await panel.getByText('5.0% (aborts above it)').waitFor();

    // The edge's figures, as authz records them, arrive while the panel shows: it reads them again.
    // Fewer than min_requests (50), so the judge leaves the canary be.
    const recorder = createRequestFigureRecorder({ redis: control.redis, flushIntervalMs: 50, onError: (error) => assert.fail(error) });
    for (let i = 0; i < 4; i++) recorder.record(agent.id, i === 0 ? 500 : 200, 20, true);
    for (let i = 0; i < 30; i++) recorder.record(agent.id, 200, 10, false);
    await recorder.close();
    const row = (name: string) => panel.getByRole('row', { name: new RegExp(`^${name}`) });
    await row('5xx ratio').getByText('25.0% (1 of 4)').waitFor({ timeout: 15_000 });
    assert.deepEqual(await row('Requests').getByRole('cell').allInnerTexts(), ['30/min', '4/min']);
    assert.deepEqual(await row('5xx ratio').getByRole('cell').allInnerTexts(), ['0.0% (0 of 30)', '25.0% (1 of 4)']);

    for (const viewport of [DESKTOP, PHONE]) {
      await page.setViewportSize(viewport);
      assert.deepEqual(await accessibilityProblems(page), [], `the canary panel at ${viewport.width} px`);
    }
    await page.setViewportSize(DESKTOP);

    // Asked, the keyboard goes to the safe answer; kept, back to Promote, and nothing happened.
    await panel.getByRole('button', { name: 'Promote' }).click();
    await page.waitForFunction(() => document.activeElement?.textContent === 'Keep the canary');
    await page.keyboard.press('Enter');
    await page.waitForFunction(() => document.activeElement?.textContent === 'Promote');
    assert.equal((await deployment()).phase, 'canary');

    await panel.getByRole('button', { name: 'Promote' }).click();
    await panel.getByRole('group', { name: 'Confirm promote' }).getByRole('button', { name: 'Yes, promote' }).click();
    await panel.waitFor({ state: 'detached' });
    await page.getByRole('status').getByText(`Deployment #${canary.number} promoted`, { exact: false }).waitFor();
    const promoted = await deployment();
    assert.deepEqual([promoted.phase, promoted.canary], [null, null]);
    assert.equal(await page.getByRole('alert').count(), 0);
  });

  it('Abort, after confirmation, returns to the stable version: the panel goes and the deployment is cancelled', async () => {
    const { canary, panel, deployment } = await servingCanary(50);
    assert.equal(await panel.locator('[data-canary-share]').innerText(), '50%');
    await panel.getByRole('button', { name: 'Abort' }).click();
    await panel.getByRole('group', { name: 'Confirm abort' }).getByRole('button', { name: 'Yes, abort' }).click();
    await panel.waitFor({ state: 'detached' });
    const aborted = await deployment();
    assert.deepEqual([aborted.phase, aborted.status], [null, 'cancelled']);
    await page.getByRole('row').filter({ has: page.getByRole('cell', { name: String(canary.number), exact: true }) }).getByText('cancelled').waitFor();
    assert.equal(await page.getByRole('alert').count(), 0);
  });
});
