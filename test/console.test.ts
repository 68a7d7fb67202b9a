import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { accessibilityProblems } from './support/accessibility.js';
import { buildConsole, launchChromium } from './support/browser.js';
import { startControl, type TestControl } from './support/control-harness.js';

/**
 * The web console (issue 17) in real Chromium against the real control API, which serves it,
 * running agents with podman: what a user does in a first session, start to end.
 */

/**
 * Where the screenshots go: a throwaway folder, so that a test run leaves the checkout as it
 * found it; `npm run docs:screenshots` sets CONSOLE_SCREENSHOTS_DIR to docs/console to
 * refresh the README's pictures on purpose.
 */
const SCREENSHOTS_WANTED = process.env.CONSOLE_SCREENSHOTS_DIR;
const DESKTOP = { width: 1280, height: 800 };
const PHONE = { width: 375, height: 740 };

describe('the web console', function () {
  this.timeout(180_000);
  let control: TestControl;
  let root: string;
  let browser: Browser;
  let page: Page;
  /** Made in `before`, not on loading: a run that filters this suite out leaves no folder behind. */
  let screenshots: string;

  /** Lighthouse's basics on the page as shown, at desktop width and at 375 px. */
  async function assertAccessible(where: string): Promise<void> {
    assert.deepEqual(await accessibilityProblems(page), [], `${where} at ${DESKTOP.width} px`);
    await page.setViewportSize(PHONE);
    assert.deepEqual(await accessibilityProblems(page), [], `${where} at ${PHONE.width} px`);
    await page.setViewportSize(DESKTOP);
  }

  before(async function () {
    buildConsole();
    control = await startControl({}, { orchestrate: true });
    root = control.baseUrl.replace(/\/v1$/, '');
    browser = await launchChromium();
    page = await browser.newPage({ viewport: DESKTOP });
    screenshots = `${SCREENSHOTS_WANTED ? resolve(SCREENSHOTS_WANTED) : mkdtempSync(join(tmpdir(), 'console-screenshots-'))}/`;
    mkdirSync(screenshots, { recursive: true });
  });

  after(async function () {
    await browser?.close();
    await control?.close();
    if (!SCREENSHOTS_WANTED && screenshots) rmSync(screenshots, { recursive: true, force: true });
  });

  describe('serving', function () {
    it('serves the page at / with a strict Content-Security-Policy and no inline script', async function () {
      const response = await fetch(`${root}/`);
      assert.equal(response.status, 200);
      assert.match(response.headers.get('content-type')!, /^text\/html/);
      const csp = response.headers.get('content-security-policy')!;
      assert.match(csp, /default-src 'self'/);
      assert.match(csp, /script-src 'self'(;|$)/);
      assert.match(csp, /frame-ancestors 'none'/);
      assert.match(csp, /connect-src 'self' http:\/\/\*\.agents\.localhost:7080/);
      assert.equal(response.headers.get('x-content-type-options'), 'nosniff');
      assert.equal(response.headers.get('referrer-policy'), 'no-referrer');
      const html = await response.text();
      assert.doesNotMatch(html, /<script(?![^>]*\bsrc=)[^>]*>/, 'every script is a file of its own');
    });

    it('answers client routes with the page, caches hashed assets for good and revalidates by ETag', async function () {
      const page = await fetch(`${root}/agents/ag_anything`, { headers: { accept: 'text/html,application/xhtml+xml,*/*;q=0.8' } });
      assert.equal(page.status, 200);
      // Only a page load gets the app: an API client's or a script's request for a missing path is the API's 404.
      for (const missing of ['/agents/ag_anything', '/assets/main-GONE.js']) {
        const notFound = await fetch(root + missing);
        assert.equal(notFound.status, 404, missing);
        assert.equal((await notFound.json()).code, 'NOT_FOUND');
      }
      const html = await page.text();
      assert.match(html, /<div id="app">/);
      assert.equal(page.headers.get('cache-control'), 'no-cache');
      const script = /src="(\/assets\/main-[A-Z0-9]+\.js)"/.exec(html)?.[1];
      assert.ok(script, html);
      const asset = await fetch(root + script);
      assert.equal(asset.status, 200);
      assert.match(asset.headers.get('content-type')!, /^text\/javascript/);
      assert.equal(asset.headers.get('cache-control'), 'public, max-age=31536000, immutable');
      const again = await fetch(root + script, { headers: { 'if-none-match': asset.headers.get('etag')! } });
      assert.equal(again.status, 304);
    });

    it('leaves /v1 and the probes to the API, and no path escapes the build folder', async function () {
      const unknown = await fetch(`${root}/v1/no-such-thing`);
      assert.equal(unknown.status, 404);
      assert.equal((await unknown.json()).code, 'NOT_FOUND');
      assert.deepEqual(await (await fetch(`${root}/livez`)).json(), { status: 'ok' });
      const escape = await fetch(`${root}/assets/..%2f..%2f..%2fpackage.json`);
      assert.doesNotMatch(await escape.text(), /"agent-platform"/);
    });
  });

  describe('the accessibility check', function () {
    it('finds an unlabelled input, a nameless button and a page wider than the viewport', async function () {
      const scratch = await browser.newPage({ viewport: PHONE });
      try {
        await scratch.setContent('<input name="q"><button></button><div style="width: 900px">wide</div>');
        const problems = await accessibilityProblems(scratch);
        assert.equal(problems.length, 3, problems.join('\n'));
        assert.match(problems.join('\n'), /unlabelled control.*button without a name.*\d+ px wide in a 375 px viewport/s);
      } finally {
        await scratch.close();
      }
    });
  });

  describe('registration modes', function () {
    for (const [mode, expectation] of [
      ['invite', 'asks for an invite code'],
      ['closed', 'says that registration is closed and offers no way to register'],
    ] as const) {
      it(`with REGISTRATION_MODE=${mode} the sign-in page ${expectation}`, async function () {
        const other = await startControl({ REGISTRATION_MODE: mode });
        const scratch = await browser.newPage({ viewport: DESKTOP });
        try {
          await scratch.goto(other.baseUrl.replace(/\/v1$/, '/'));
          await scratch.getByRole('heading', { name: 'Sign in' }).waitFor();
          if (mode === 'invite') {
            await scratch.getByRole('button', { name: 'Create account' }).click();
            await scratch.getByLabel('Invite code').waitFor();
            await scratch.getByLabel('Name').fill('Invited');
            await scratch.getByLabel('Email').fill(`invite-${Date.now()}@example.com`);
            await scratch.getByLabel('Password').fill('a long enough password');
            await scratch.getByLabel('Invite code').fill('not-a-real-code');
            await scratch.getByRole('button', { name: 'Create account' }).click();
            // The API's own message (INVALID_INVITE), where the form was sent.
            assert.match(await scratch.getByRole('alert').innerText(), /invite/i);
          } else {
            await scratch.getByText('Registration is closed on this platform').waitFor();
            assert.equal(await scratch.getByRole('button', { name: 'Create account' }).count(), 0);
          }
        } finally {
          await scratch.close();
          await other.close();
        }
      });
    }
  });

  describe('a first session', function () {
    // Each step starts where the one before left the page: after a failed step the rest fail at once, naming it.
    let failedStep: string | undefined;
    beforeEach(function () {
      if (failedStep) throw new Error(`not run: the earlier step "${failedStep}" failed`);
    });
    afterEach(function () {
      if (this.currentTest?.state === 'failed') failedStep ??= this.currentTest.title;
    });
    const agentName = 'console-echo';

    it('creates an account from the sign-in page', async function () {
      await page.goto(`${root}/`);
      await page.getByRole('heading', { name: 'Sign in' }).waitFor();
      await assertAccessible('the sign-in page');
      await page.getByRole('button', { name: 'Create account' }).click();
      await page.getByLabel('Name').fill('Console User');
      await page.getByLabel('Email').fill(`console-${Date.now()}@example.com`);
      await page.getByLabel('Password').fill('a long enough password');
      await page.getByRole('button', { name: 'Create account' }).click();
      await page.getByRole('heading', { name: 'Agents' }).waitFor();
      await page.getByText('No agents yet.').waitFor();
    });

    it("shows the API's message where sign-in failed", async function () {
      const other = await browser.newPage({ viewport: DESKTOP });
      try {
        await other.goto(`${root}/`);
        await other.getByLabel('Email').fill('nobody@example.com');
        await other.getByLabel('Password').fill('wrong password');
        await other.getByRole('button', { name: 'Sign in' }).click();
        const alert = other.getByRole('alert');
        await alert.waitFor();
        assert.match(await alert.innerText(), /\S/);
      } finally {
        await other.close();
      }
    });

    it('creates and deploys an agent from the form, and sees it running', async function () {
      await page.getByRole('button', { name: 'New agent' }).click();
      await page.getByRole('heading', { name: 'New agent' }).waitFor();
      await assertAccessible('the new-agent form');
      await page.getByLabel('Name', { exact: true }).fill(agentName);
      await page.getByLabel('Tags').fill('demo, console');
      // Adding a variable re-renders the form: what was typed elsewhere in it stays.
      await page.getByLabel('Replicas').fill('2');
      await page.getByRole('button', { name: 'Add variable' }).click();
      assert.equal(await page.getByLabel('Replicas').inputValue(), '2');
      await page.getByLabel('Replicas').fill('1');
      await page.getByLabel('Name 1').fill('GREETING');
      await page.getByLabel('Value 1').fill('hello');
      await page.getByRole('button', { name: 'Create and deploy' }).click();
      await page.getByRole('heading', { name: agentName }).waitFor();
      await page.locator('[data-status="running"]').waitFor({ timeout: 90_000 });
      await page.locator('[data-rollout-end="succeeded"]').waitFor({ timeout: 60_000 });
      assert.match(await page.locator('#agent-url').innerText(), /^http:\/\/console-echo[\w-]*\.agents\.localhost:7080$/);
      await assertAccessible('the agent page');
      await page.screenshot({ path: `${screenshots}agent.png` });
    });

    it('sees a log line arrive live: a replica added after the stream opened logs its start', async function () {
      const lines = page.getByRole('list', { name: 'Log lines' }).getByRole('listitem');
      await lines.filter({ hasText: 'serving on 8080' }).first().waitFor({ timeout: 30_000 });
      const before = await lines.filter({ hasText: 'serving on 8080' }).count();
      await page.getByRole('button', { name: 'Scale up' }).click();
      await page.waitForFunction(
        (count) => [...document.querySelectorAll('.logs li')].filter((line) => line.textContent?.includes('serving on 8080')).length > count,
        before,
        { timeout: 60_000 },
      );
    });

    it('filters the logs by lowest level on the server: at error, only the replicas\' stderr lines are left', async function () {
      await page.getByLabel('Lowest level').selectOption('error');
      await page.waitForFunction(() => {
        const levels = [...document.querySelectorAll('.logs li .level')].map((level) => level.textContent);
        return levels.length > 0 && levels.every((level) => level === 'error');
      }, undefined, { timeout: 30_000 });
      assert.equal(await page.getByRole('list', { name: 'Log lines' }).getByRole('listitem').filter({ hasText: 'serving on 8080' }).count(), 0);
    });

    it('draws the CPU chart point by point from the metrics stream (three samples at least)', async function () {
      // The harness's clock is moved by hand: here it follows real time, so samples are seconds apart as in production.
      const ticking = setInterval(() => control.clock.advance(1000), 1000);
      try {
        await page.getByRole('tab', { name: 'Metrics' }).click();
        await page.waitForFunction(() => Number(document.querySelector('figure[aria-label="CPU chart"]')?.getAttribute('data-points')) >= 3, undefined, { timeout: 30_000 });
      } finally {
        clearInterval(ticking);
      }
      assert.equal(await page.locator('figure[aria-label="CPU chart"] canvas').count(), 1);
      await assertAccessible('the metrics tab');
      await page.screenshot({ path: `${screenshots}metrics.png` });
    });

    it('creates an access key shown once, lists it, and revokes it', async function () {
      await page.getByRole('tab', { name: 'Access keys' }).click();
      await page.getByLabel('Label').fill('console test');
      await page.getByRole('button', { name: 'Create access key' }).click();
      assert.match(await page.locator('code.secret').innerText(), /^agk_\S+$/);
      const listed = page.getByRole('list', { name: 'access keys' }).getByRole('listitem').filter({ hasText: 'console test' });
      await listed.waitFor();
      await assertAccessible('the access keys tab');
      await page.getByRole('button', { name: 'Revoke console test' }).click();
      await listed.waitFor({ state: 'detached' });
      const keys = await control.request('GET', `/agents/${await agentId()}/access-keys`, { token: await token() });
      assert.deepEqual(keys.body.access_keys.map((key: { label: string }) => key.label).includes('console test'), false);
    });

    it('shows the deployment history, the first deployment succeeded', async function () {
      await page.getByRole('tab', { name: 'Deployments' }).click();
      const first = page.getByRole('row').filter({ hasText: 'succeeded' });
      await first.waitFor();
      assert.match(await first.innerText(), /^1\s/);
      await assertAccessible('the deployments tab');
    });

    it('shows usage against the plan as bars, and creates and revokes a personal API key', async function () {
      await page.getByRole('link', { name: 'Account' }).click();
      await page.getByRole('heading', { name: 'Account' }).waitFor();
      await page.getByText(/^Agents: 1 of \d+$/).waitFor();
      assert.equal(await page.getByRole('meter').count(), 4);
      await page.getByLabel('Label').fill('laptop');
      await page.getByRole('button', { name: 'Create API key' }).click();
      assert.match(await page.locator('code.secret').innerText(), /^agnt_\S+$/);
      await assertAccessible('the account page');
      await page.getByRole('button', { name: 'Revoke laptop' }).click();
      await page.getByText('No API keys.').waitFor();
    });

    it('lists the agent with its status in words, filtered by status and tag', async function () {
      await page.getByRole('link', { name: 'Agents' }).click();
      const row = page.getByRole('row').filter({ hasText: agentName });
      await row.waitFor();
      assert.match(await row.innerText(), /running/);
      await page.getByLabel('Tag').fill('nope');
      await page.getByLabel('Tag').press('Enter');
      await page.getByText('No agents match these filters.').waitFor();
      await page.getByLabel('Tag').fill('demo');
      await page.getByLabel('Tag').press('Enter');
      await page.getByLabel('Status').selectOption('running');
      await row.waitFor();
      await assertAccessible('the agents list');
      await page.screenshot({ path: `${screenshots}agents.png` });
    });

    it('signs out: the session ends at the API, the token is gone from the tab, and a reload stays signed out', async function () {
      const signedIn = await token();
      await page.getByRole('button', { name: 'Sign out' }).click();
      await page.getByRole('heading', { name: 'Sign in' }).waitFor();
      assert.equal(await page.evaluate(() => sessionStorage.length), 0);
      // POST /auth/logout was sent: a copy of the token is refused too.
      assert.equal((await control.request('GET', '/auth/me', { token: signedIn })).status, 401);
      await page.reload();
      await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    });

    const token = async () => (await page.evaluate(() => sessionStorage.getItem('agent-platform.session')))!;
    const agentId = async () => /\/agents\/([^/]+)$/.exec(new URL(page.url()).pathname)![1]!;
  });
});
