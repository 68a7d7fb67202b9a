import assert from 'node:assert/strict';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { freePort } from '../scripts/lib/local-services.js';
import { buildConsole, launchChromium, openSignedIn } from './support/browser.js';
import { stepsInOrder } from './support/console-steps.js';
import { startControl, type TestControl } from './support/control-harness.js';
import { edgeRequest } from './support/edge-upstream.js';
import { startLocalEdgeStack, type LocalEdgeStack } from './support/local-edge-stack.js';

/**
 * The agent page's actions in real Chromium, against the control API running agents with
 * podman and the local edge in front, as `npm run up` pairs them: Try it through the edge
 * (CORS), copy buttons, access, rate limit, deploy, rollback, scale up to the plan's limit,
 * auto-scaling settings, delete with confirmation, and paging through the agents list. One user and one running
 * agent (the test image answering /invoke) carry the steps; each checks what the user sees
 * and the API's state behind it.
 */
describe('the web console: agent actions', function () {
  this.timeout(180_000);
  const DESKTOP = { width: 1280, height: 800 };
  let control: TestControl;
  let edge: LocalEdgeStack;
  let root: string;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let user: { token: string; user: { email: string }; password: string };
  let agentId: string;
  let agentUrl: string;

  before(async function () {
    buildConsole();
    // Agent URLs name the edge's port (AGENT_URL_PORT), so the edge's port is chosen first.
    const edgePort = await freePort();
    control = await startControl({ AGENT_URL_PORT: String(edgePort) }, { orchestrate: true });
    root = control.baseUrl.replace(/\/v1$/, '');
    // authz's Redis deadline raised as for the canary suite: this one starts containers while
    // its steps call through the edge, and a Check slowed by that is not what a step is about.
    edge = await startLocalEdgeStack(control, { port: edgePort, consoleOrigin: root, authzRedisTimeoutMs: 2_000 });
    user = await control.signUp();
    const created = await control.request('POST', '/agents', {
      token: user.token,
      body: { name: 'try-echo', access: 'private', deploy: { replicas: 1, env: [{ key: 'MODE', value: 'agent' }] } },
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    agentId = created.body.id;
    agentUrl = created.body.url;
    browser = await launchChromium();
    context = await browser.newContext({ viewport: DESKTOP });
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: root });
    page = await context.newPage();
  });

  after(async function () {
    await browser?.close();
    await edge?.close();
    await control?.close();
  });

  const api = (method: string, path: string, body?: unknown) => control.request(method, path, { token: user.token, body });
  const clipboard = () => page.evaluate(() => navigator.clipboard.readText());
  const tab = (name: string) => page.getByRole('tab', { name, exact: true }).click();
  const group = (name: string) => page.getByRole('group', { name, exact: true });
  /** The Auto-scaling group's inputs as shown: the checkbox, min, max and the idle period. */
  const autoScaleInputs = async () => {
    const scaling = group('Auto-scaling');
    return [
      await scaling.getByLabel('Auto-scale', { exact: true }).isChecked(),
      ...(await Promise.all(['Min replicas', 'Max replicas', 'Park when idle for (seconds)'].map((label) => scaling.getByLabel(label).inputValue()))),
    ];
  };

  describe('one agent, step by step', function () {
    stepsInOrder();

    it('signs in and opens the agent from the list; it reaches running', async function () {
      await page.goto(`${root}/`);
      await page.getByLabel('Email').fill(user.user.email);
      await page.getByLabel('Password').fill(user.password);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('link', { name: 'try-echo' }).click();
      await page.getByRole('heading', { name: 'try-echo' }).waitFor();
      await page.locator('[data-status="running"]').waitFor({ timeout: 90_000 });
      assert.equal(await page.locator('#agent-url').innerText(), agentUrl);
    });

    it("copies the agent's URL with its copy button", async function () {
      await page.getByRole('button', { name: "Copy the agent's URL" }).click();
      await page.locator('.url-row').getByText('Copied', { exact: true }).waitFor();
      assert.equal(await clipboard(), agentUrl);
    });

    it("Try it: a fresh access key, copied where it is shown once, gets the agent's answer streamed through the edge", async function () {
      // The page may call the edge at all because its CSP names the agents' origin, on the edge's port.
      const csp = (await fetch(`${root}/`)).headers.get('content-security-policy')!;
      assert.ok(csp.includes(`connect-src 'self' ${new URL(agentUrl).protocol}//*.agents.localhost:${new URL(agentUrl).port}`), csp);
      await tab('Access keys');
      await page.getByLabel('Label').fill('try it');
      await page.getByRole('button', { name: 'Create access key' }).click();
      const shown = await page.locator('code.secret').innerText();
      await page.getByRole('button', { name: 'Copy the new access key' }).click();
      await page.locator('.once').getByText('Copied', { exact: true }).waitFor();
      assert.equal(await clipboard(), shown);
      const keys = await api('GET', `/agents/${agentId}/access-keys`);
      assert.ok(keys.body.access_keys.some((key: { label: string }) => key.label === 'try it'), 'listed by the API');

      await tab('Try it');
      await page.getByLabel('Input').fill('hello world');
      await page.getByLabel('Access key', { exact: true }).fill(await clipboard());
      await page.getByRole('button', { name: 'Send' }).click();
      await page.locator('output.answer').filter({ hasText: 'echo: hello world' }).waitFor({ timeout: 30_000 });
      assert.equal(await page.getByRole('alert').count(), 0);
    });

    it("with a wrong key, shows the edge's 401 message in the page", async function () {
      await page.getByLabel('Access key', { exact: true }).fill('agk_not-a-real-key');
      await page.getByRole('button', { name: 'Send' }).click();
      const alert = page.getByRole('alert');
      await alert.waitFor();
      assert.match(await alert.innerText(), /missing or invalid access key/);
      assert.equal(await page.locator('output.answer').innerText(), '');
    });

    it('makes the agent public (Try it then needs no key) and private again', async function () {
      await group('Access').getByRole('combobox').selectOption('public');
      await page.getByText(/replicas? · public ·/).waitFor();
      assert.equal((await api('GET', `/agents/${agentId}`)).body.access, 'public');
      assert.equal(await page.getByLabel('Access key', { exact: true }).count(), 0);
      await page.getByLabel('Input').fill('open door');
      await page.getByRole('button', { name: 'Send' }).click();
      await page.locator('output.answer').filter({ hasText: 'echo: open door' }).waitFor({ timeout: 30_000 });

      await group('Access').getByRole('combobox').selectOption('private');
      await page.getByText(/replicas? · private ·/).waitFor();
      assert.equal((await api('GET', `/agents/${agentId}`)).body.access, 'private');
    });

    it('the Metrics tab charts the requests sent through the edge', async function () {
      // Two more through the edge now, as a caller with a key of its own, so the count this step
      // waits for comes from requests it made and saw answered, not from steps before it. (A CI
      // run timed out here with the steps before it under a second; which side lagged is unknown.)
      const key = await api('POST', `/agents/${agentId}/access-keys`, { label: 'metrics' });
      assert.equal(key.status, 201, JSON.stringify(key.body));
      for (const input of ['one', 'two']) {
        const answer = await edgeRequest({
          port: edge.port,
          host: new URL(agentUrl).host,
          path: '/invoke',
          method: 'POST',
          headers: { authorization: `Bearer ${key.body.key}`, 'content-type': 'application/json' },
          body: JSON.stringify({ input }),
        });
        assert.equal(answer.status, 200, answer.body);
      }
      await tab('Metrics');
      // The edge writes each second's figures once, so they show within a sample or two.
      await page
        .waitForFunction(() => {
          const caption = document.querySelector('figure[aria-label="Requests, last minute chart"] figcaption')?.textContent ?? '';
          return Number(/: ([\d.]+) requests/.exec(caption)?.[1] ?? 0) >= 2;
        }, undefined, { timeout: 30_000 })
        .catch(async (error: Error) => {
          // What the page showed and what the API says now, so a timeout tells which side lagged.
          const captions = await page.locator('figure figcaption').allInnerTexts();
          const alerts = await page.getByRole('alert').allInnerTexts();
          const sample = await api('GET', `/agents/${agentId}/metrics`);
          throw new Error(`${error.message}\ncharts: ${captions.join(' | ')}\nalerts: ${alerts.join(' | ') || 'none'}\nGET metrics: ${JSON.stringify(sample.body)}`);
        });
      assert.equal(await page.locator('figure[aria-label="Latency p95, last minute chart"] canvas').count(), 1);
    });

    it("sets and clears the rate limit; a value the API refuses shows its message by the rate limit's control", async function () {
      const limit = group('Rate limit').getByLabel('Rate limit (requests/min)');
      await limit.fill('30');
      await group('Rate limit').getByRole('button', { name: 'Set rate limit' }).click();
      await page.getByText('rate limit 30/min per caller').waitFor();
      assert.equal((await api('GET', `/agents/${agentId}`)).body.rate_limit_rpm, 30);

      await limit.fill('200000');
      await group('Rate limit').getByRole('button', { name: 'Set rate limit' }).click();
      assert.match(await group('Rate limit').getByRole('alert').innerText(), /rate_limit_rpm/);
      assert.equal((await api('GET', `/agents/${agentId}`)).body.rate_limit_rpm, 30, 'nothing changed');

      await limit.fill('');
      await group('Rate limit').getByRole('button', { name: 'Set rate limit' }).click();
      await page.getByText('default rate limit').waitFor();
      assert.equal(await group('Rate limit').getByRole('alert').count(), 0);
      assert.equal((await api('GET', `/agents/${agentId}`)).body.rate_limit_rpm, null);
    });

    it('deploys again from the agent page: the rollout shows its progress and ends with the agent running', async function () {
      await group('Deploy').getByRole('button', { name: 'Deploy' }).click();
      await page.getByText('Deployment #2').waitFor();
      await page.locator('.rollout .steps li').first().waitFor({ timeout: 60_000 });
      await page.locator('[data-rollout-end="succeeded"]').waitFor({ timeout: 90_000 });
      await page.locator('[data-status="running"]').waitFor({ timeout: 30_000 });
      const history = await api('GET', `/agents/${agentId}/deployments`);
      assert.deepEqual(history.body.deployments.map((d: { number: number; status: string }) => [d.number, d.status]), [[2, 'succeeded'], [1, 'succeeded']]);
    });

    it('rolls back to the first deployment from the Deployments tab', async function () {
      await tab('Deployments');
      await page.getByRole('button', { name: 'Roll back to deployment 1' }).click();
      await page.getByRole('row').filter({ has: page.getByRole('cell', { name: '3', exact: true }) }).waitFor();
      await page.getByText('Deployment #3').waitFor({ timeout: 30_000 });
      await page.locator('[data-rollout-end="succeeded"]').waitFor({ timeout: 90_000 });
      const history = await api('GET', `/agents/${agentId}/deployments`);
      const [newest, , first] = history.body.deployments;
      assert.equal(newest.number, 3);
      assert.equal(newest.rollback_of, first.id);
    });

    it("scales up to the plan's limit; one more shows the API's message by the scale buttons, and nothing changes", async function () {
      const scale = group('Scale');
      for (const replicas of [2, 3]) {
        await scale.getByRole('button', { name: 'Scale up' }).click();
        await page.getByText(new RegExp(`^${replicas} replicas ·`)).waitFor();
        assert.equal((await api('GET', `/agents/${agentId}`)).body.replicas, replicas);
      }
      await scale.getByRole('button', { name: 'Scale up' }).click();
      // The free plan's max_replicas (control/domain/plans.ts), in the API's QUOTA_EXCEEDED message.
      assert.match(await scale.getByRole('alert').innerText(), /^Plan limit max_replicas is 3; this request needs 4$/);
      assert.equal((await api('GET', `/agents/${agentId}`)).body.replicas, 3);
      for (const replicas of [2, 1]) {
        await scale.getByRole('button', { name: 'Scale down' }).click();
        await page.getByText(new RegExp(`^${replicas} replicas? ·`)).waitFor();
      }
      assert.equal(await scale.getByRole('alert').count(), 0);
    });

    it('turns on auto-scaling with a minimum of 0 and an idle period from the Auto-scaling group: one deploy of just those, and the agent has them', async function () {
      const scaling = group('Auto-scaling');
      // What the agent was created with: the deploy's defaults (control/domain/deploy.ts DEFAULT_DEPLOY).
      await scaling.getByText('Auto-scaling off; at most 10 replicas.').waitFor();
      assert.deepEqual(await autoScaleInputs(), [false, '1', '10', '300']);
      await scaling.getByLabel('Auto-scale', { exact: true }).check();
      await scaling.getByLabel('Min replicas').fill('0');
      await scaling.getByLabel('Max replicas').fill('2');
      await scaling.getByLabel('Park when idle for (seconds)').fill('600');
      await scaling.getByRole('button', { name: 'Save auto-scaling' }).click();
      await scaling.getByText('Auto-scaling on: 0 to 2 replicas, parked after 600 s without requests.').waitFor();
      assert.deepEqual(await autoScaleInputs(), [true, '0', '2', '600'], 'the form shows what was saved');

      const { deploy } = (await api('GET', `/agents/${agentId}`)).body;
      assert.deepEqual([deploy.auto_scale, deploy.min_replicas, deploy.max_replicas, deploy.scale_to_zero_after_seconds], [true, 0, 2, 600]);
      assert.deepEqual([deploy.replicas, deploy.env], [1, [{ key: 'MODE', value: 'agent', secret: false }]], 'the rest of the deploy is kept');
      await page.getByText('Deployment #4').waitFor();
      await page.locator('[data-rollout-end="succeeded"]').waitFor({ timeout: 90_000 });
      assert.equal(await scaling.getByRole('alert').count(), 0);
    });

    it("a combination the API refuses shows its message in the Auto-scaling group, keeps what was typed, and changes nothing", async function () {
      const scaling = group('Auto-scaling');
      const before = (await api('GET', `/agents/${agentId}`)).body;
      const refused = (message: RegExp) => scaling.getByRole('alert').filter({ hasText: message }).waitFor().catch(async (error: Error) => {
        throw new Error(`${error.message}\nshown instead: ${(await scaling.getByRole('alert').allInnerTexts()).join(' | ')}`);
      });

      await scaling.getByLabel('Auto-scale', { exact: true }).uncheck();
      await scaling.getByRole('button', { name: 'Save auto-scaling' }).click();
      // control/domain/deploy.ts assertConsistent: nothing but the auto-scaler would park the agent at 0.
      await refused(/^body\.deploy\.min_replicas: min_replicas may be 0 only with auto_scale: true/);

      await scaling.getByLabel('Auto-scale', { exact: true }).check();
      await scaling.getByLabel('Min replicas').fill('3');
      await scaling.getByRole('button', { name: 'Save auto-scaling' }).click();
      await refused(/^body\.deploy\.min_replicas: min_replicas must not exceed max_replicas$/);
      assert.deepEqual(await autoScaleInputs(), [true, '3', '2', '600']);

      const after = (await api('GET', `/agents/${agentId}`)).body;
      assert.deepEqual([after.version, after.deploy], [before.version, before.deploy], 'nothing changed');
      assert.equal((await api('GET', `/agents/${agentId}/deployments`)).body.deployments.length, 4, 'no deployment was made');
      await scaling.getByText('Auto-scaling on: 0 to 2 replicas, parked after 600 s without requests.').waitFor();
    });

    it('works from the keyboard: arrow keys, Home and End move between the tabs; Delete moves focus to "Keep it" and back', async function () {
      // Each key's outcome is awaited in the page: Preact renders and runs effects after the key.
      const focusOn = (text: string) => page.waitForFunction((name) => document.activeElement?.textContent === name, text, { timeout: 5_000 });
      const tabSettlesOn = async (name: string) => {
        await focusOn(name);
        await page.getByRole('tab', { name, selected: true }).waitFor({ timeout: 5_000 });
      };
      await page.getByRole('tab', { name: 'Deployments' }).focus();
      await page.keyboard.press('ArrowRight');
      await tabSettlesOn('Try it');
      await page.getByLabel('Input').waitFor();
      await page.keyboard.press('ArrowRight');
      await tabSettlesOn('Logs');
      await page.keyboard.press('End');
      await tabSettlesOn('Try it');
      await page.keyboard.press('Home');
      await tabSettlesOn('Logs');
      assert.deepEqual(await page.locator('[role="tab"][tabindex="0"]').allInnerTexts(), ['Logs'], 'Tab enters the list at the selected tab only');

      await group('Delete').getByRole('button', { name: 'Delete' }).focus();
      await page.keyboard.press('Enter');
      await focusOn('Keep it');
      await page.keyboard.press('Enter');
      await focusOn('Delete');
      assert.equal((await api('GET', `/agents/${agentId}`)).status, 200);
    });

    it('deletes only after confirmation: "Keep it" keeps the agent, "Yes, delete" removes it and returns to the list', async function () {
      await group('Delete').getByRole('button', { name: 'Delete' }).click();
      await page.getByRole('group', { name: 'Confirm delete' }).getByRole('button', { name: 'Keep it' }).click();
      await group('Delete').getByRole('button', { name: 'Delete' }).waitFor();
      assert.equal((await api('GET', `/agents/${agentId}`)).status, 200);

      await group('Delete').getByRole('button', { name: 'Delete' }).click();
      await page.getByRole('group', { name: 'Confirm delete' }).getByRole('button', { name: 'Yes, delete' }).click();
      await page.getByRole('heading', { name: 'Agents' }).waitFor();
      await page.getByText('No agents yet.').waitFor();
      assert.equal((await api('GET', `/agents/${agentId}`)).status, 404);
    });
  });

  it('creates an auto-scaled agent that may park from the form; parked, it says so, and Try it wakes it', async function () {
    control.control.loops.wakes!.start();
    // A page of its own: the steps above sign in on theirs.
    const own = await context.newPage();
    try {
      await openSignedIn(own, root, user.token, '/');
      await own.getByRole('button', { name: 'New agent' }).click();
      await own.getByLabel('Name', { exact: true }).fill('parks-when-idle');
      await own.getByLabel('Access').selectOption('public');
      await own.getByRole('button', { name: 'Add variable' }).click();
      await own.getByLabel('Name 1').fill('MODE');
      await own.getByLabel('Value 1').fill('agent');
      await own.getByLabel('Auto-scale').check();
      await own.getByLabel('Min replicas').fill('0');
      await own.getByLabel('Max replicas').fill('2');
      await own.getByLabel('Park when idle for (seconds)').fill('120');
      await own.getByRole('button', { name: 'Create and deploy' }).click();
      await own.getByRole('heading', { name: 'parks-when-idle' }).waitFor();
      const id = new URL(own.url()).pathname.split('/').at(-1)!;
      const { deploy } = (await api('GET', `/agents/${id}`)).body;
      assert.deepEqual([deploy.auto_scale, deploy.min_replicas, deploy.max_replicas, deploy.scale_to_zero_after_seconds], [true, 0, 2, 120]);
      await own.locator('[data-status="running"]').waitFor({ timeout: 90_000 });

      // Parked as the idle parker parks it (its timing is scale-to-zero-podman.test.ts's).
      assert.equal(await control.control.services.platformScaling.park(id, 1), true);
      await own.getByText('0 replicas (parked: the next request wakes it)').waitFor({ timeout: 30_000 });
      await own.getByRole('tab', { name: 'Try it', exact: true }).click();
      await own.getByLabel('Input').fill('wake up');
      await own.getByRole('button', { name: 'Send' }).click();
      await own.locator('output.answer').filter({ hasText: 'echo: wake up' }).or(own.getByRole('alert')).waitFor({ timeout: 60_000 });
      assert.equal(await own.getByRole('alert').count(), 0, await own.getByRole('alert').allInnerTexts().then((texts) => texts.join(' | ')));
      assert.match(await own.locator('output.answer').innerText(), /^echo: wake up\s*$/);
      await own.getByText(/^1 replica · public/).waitFor({ timeout: 30_000 });
      await api('DELETE', `/agents/${id}`);
    } finally {
      await own.close();
      await control.control.loops.wakes!.stop();
    }
  });

  it('pages through more agents than one page holds', async function () {
    const many = await control.signUp();
    // 21 agents: past the free plan's 10, so this account is on pro (as control-quotas.test.ts does).
    await control.db('accounts').where({ id: (many.user as { account_id: string }).account_id }).update({ plan: 'pro' });
    for (let index = 1; index <= 21; index += 1) {
      // At 0 replicas: the list is what pages, and 21 containers starting would load the machine
      // through every step after this one (a CI run's Metrics step timed out while they started).
      const created = await control.request('POST', '/agents', { token: many.token, body: { name: `paged-${String(index).padStart(2, '0')}`, deploy: { replicas: 0 } } });
      assert.equal(created.status, 201);
    }
    const reader = await context.newPage();
    try {
      await openSignedIn(reader, root, many.token, '/');
      const rows = reader.getByRole('row').filter({ hasText: /paged-\d+/ });
      await reader.getByText('Page 1 of 2').waitFor();
      assert.equal(await rows.count(), 20);
      assert.equal(await reader.getByRole('button', { name: 'Previous page' }).isDisabled(), true);
      await reader.getByRole('button', { name: 'Next page' }).click();
      await reader.getByText('Page 2 of 2').waitFor();
      assert.equal(await rows.count(), 1);
      assert.equal(await reader.getByRole('button', { name: 'Next page' }).isDisabled(), true);
      await reader.getByRole('button', { name: 'Previous page' }).click();
      await reader.getByText('Page 1 of 2').waitFor();
      assert.equal(await rows.count(), 20);
    } finally {
      await reader.close();
    }
  });
});
