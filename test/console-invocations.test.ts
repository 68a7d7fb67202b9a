import assert from 'node:assert/strict';
import type { Browser, Locator, Page } from 'playwright-core';
import { accessibilityProblems } from './support/accessibility.js';
import { buildConsole, launchChromium, openAgentTab } from './support/browser.js';
import { startControl, type TestControl } from './support/control-harness.js';
import { createAgent, expectStatus } from './support/control-api.js';
import { invokeTrace, sendTraces } from './support/replica-traces.js';

/** gpt-4o's default prices, 2.5 and 10 USD per million tokens in and out (control/domain/model-prices.ts). */
const costOf = (input: number, output: number) => `$${((input * 2.5 + output * 10) / 1e6).toFixed(6)}`;

/**
 * The agent page's Invocations tab (issue 38) in real Chromium: the invokes an agent's
 * replicas traced, sent as a replica sends them (OTLP/HTTP JSON to the agent services with a
 * replica token), listed with their figures, and one opened as a waterfall of its spans.
 * test/agent-traces.test.ts covers the API behind it.
 */
describe('the web console: invocations', function () {
  this.timeout(120_000);
  const DESKTOP = { width: 1280, height: 800 };
  const PHONE = { width: 375, height: 740 };
  let control: TestControl;
  let browser: Browser;
  let page: Page;
  let root: string;

  before(async () => {
    buildConsole();
    control = await startControl({});
    root = control.baseUrl.replace(/\/v1$/, '');
    browser = await launchChromium();
    page = await (await browser.newContext({ viewport: DESKTOP })).newPage();
  });
  after(async () => {
    await browser?.close();
    await control?.close();
  });

  /** The page signed in with `token`, on the Invocations tab of `agentId`. */
  async function openInvocations(token: string, agentId: string): Promise<void> {
    await openAgentTab(page, root, token, agentId, 'Invocations');
  }

  /** An agent with the traces sent for it, and its owner's token. */
  async function agentWith(name: string, traces: (start: number) => ReturnType<typeof invokeTrace>[]) {
    const { token } = await control.signUp();
    const agent = await createAgent(control, token, { name });
    const sent = traces(control.clock.now().getTime() - 120_000);
    if (sent.length > 0) await sendTraces(control, agent.id, sent);
    return { token, agent, sent };
  }

  const list = () => page.getByRole('table', { name: 'Invocations' });
  const rowOf = (invocationId: string) => list().locator(`tr[data-invocation="${invocationId}"]`);
  const listedIds = () => list().locator('tbody tr').evaluateAll((rows) => rows.map((row) => row.getAttribute('data-invocation')));
  const opener = (invocationId: string) => page.getByRole('button', { name: new RegExp(`show invocation ${invocationId}$`) });
  const spans = () => page.getByRole('table', { name: 'Spans' });
  /** The spans' rows as drawn, top to bottom: name (as shown), depth, indentation, bar offset and width (px, computed), details. */
  const waterfall = () => spans().locator('tbody tr').evaluateAll((rows) => rows.map((row) => {
    const name = row.querySelector('.span-name')!;
    const bar = row.querySelector('.waterfall-bar')!;
    const track = bar.parentElement!;
    // The name as seen: without the tree glyph and the words for screen readers.
    const shown = name.cloneNode(true) as Element;
    shown.querySelectorAll('.visually-hidden, [aria-hidden]').forEach((node) => node.remove());
    return {
      name: shown.textContent!.trim(),
      depth: Number(row.getAttribute('data-depth')),
      indent: parseFloat(getComputedStyle(name).paddingLeft),
      left: parseFloat(getComputedStyle(bar).left),
      width: parseFloat(getComputedStyle(bar).width),
      track: parseFloat(getComputedStyle(track).width),
      bar: getComputedStyle(bar).backgroundImage + getComputedStyle(bar).backgroundColor,
      details: (row.lastElementChild as HTMLElement).innerText,
    };
  }));
  const cellsOf = async (row: Locator) => (await row.getByRole('cell').allInnerTexts()).map((text) => text.trim());
  const assertAccessible = async (what: string) => {
    for (const viewport of [DESKTOP, PHONE]) {
      await page.setViewportSize(viewport);
      assert.deepEqual(await accessibilityProblems(page), [], `${what} at ${viewport.width} px`);
    }
    await page.setViewportSize(DESKTOP);
  };
  const near = (actual: number, expected: number, what: string) => assert.ok(Math.abs(actual - expected) <= 2, `${what}: ${actual} px, expected ${expected} px`);

  it('lists the invocations newest first with tokens, cost and tool calls; a row opens a waterfall of its spans under the invoke', async () => {
    const { token, agent, sent } = await agentWith('traced', (start) => [invokeTrace({ start, session: 'conv-old' }), invokeTrace({ start: start + 30_000, session: 'conv-new' })]);
    const [older, newer] = sent.map((trace) => trace.traceId) as [string, string];

    await openInvocations(token, agent.id);
    await rowOf(newer).waitFor();
    assert.deepEqual(await listedIds(), [newer, older], 'newest first');
    assert.deepEqual((await cellsOf(rowOf(newer))).slice(1), ['ok', '1000 ms', 'gpt-4o-2024-08-06', '400 in, 70 out', costOf(400, 70), '1', 'conv-new']);
    assert.deepEqual((await cellsOf(rowOf(older))).slice(1), ['ok', '1000 ms', 'gpt-4o-2024-08-06', '400 in, 70 out', costOf(400, 70), '1', 'conv-old']);
    const api = await control.request('GET', `/agents/${agent.id}/invocations`, { token });
    expectStatus(api, 200);
    assert.equal(await rowOf(newer).locator('time').getAttribute('datetime'), api.body.invocations[0].started_at);
    await assertAccessible('the invocations list');

    await opener(newer).click();
    const heading = page.getByRole('heading', { name: `Invocation ${newer}` });
    await heading.waitFor();
    await spans().waitFor();
    assert.equal(await heading.evaluate((element) => element === document.activeElement), true, 'the opened invocation takes the focus');
    assert.equal(await list().isVisible(), false, 'the list makes way for the invocation');
    const facts = await page.locator('.invocation-facts').innerText();
    for (const shown of ['1000 ms', 'conv-new', 'gpt-4o-2024-08-06', '400 in, 70 out', costOf(400, 70)]) assert.ok(facts.includes(shown), `the summary shows ${shown}: ${facts}`);

    const drawn = await waterfall();
    assert.deepEqual(drawn.map((row) => [row.name, row.depth]), [['invoke_agent', 0], ['chat gpt-4o', 1], ['execute_tool lookup', 1], ['chat gpt-4o', 1]], 'the invoke, then its three calls under it in the order they started');
    const [invoke, firstChat, tool, secondChat] = drawn as [typeof drawn[0], typeof drawn[0], typeof drawn[0], typeof drawn[0]];
    for (const child of [firstChat, tool, secondChat]) assert.ok(child.indent > invoke.indent + 10, `a call is indented under the invoke: ${child.indent} px against ${invoke.indent} px`);
    // Bars on the invoke's 1000 ms: the invoke spans the track, a 400 ms call 40% of it, the 50 ms tool call 5%.
    const track = invoke.track;
    assert.ok(track > 100, `the timeline is drawn: ${track} px`);
    near(invoke.left, 0, 'the invoke starts the timeline');
    near(invoke.width, track, "the invoke's bar");
    near(firstChat.width, track * 0.4, "the first model call's bar");
    near(secondChat.width, track * 0.4, "the second model call's bar");
    near(tool.width, track * 0.05, "the tool call's bar");
    assert.ok(invoke.width > firstChat.width && firstChat.width > tool.width, 'a longer span has a wider bar');
    near(firstChat.left, track * 0.01, "the first model call's start");
    near(tool.left, track * 0.42, "the tool call's start");
    near(secondChat.left, track * 0.48, "the second model call's start");
    assert.equal(firstChat.details, `gpt-4o-2024-08-06 · 100 in, 20 out tokens · ${costOf(100, 20)}`);
    assert.equal(secondChat.details, `gpt-4o-2024-08-06 · 300 in, 50 out tokens · ${costOf(300, 50)}`);
    assert.equal(tool.details, 'tool lookup');
    // The bars' timing in words, for whoever cannot see them.
    await spans().getByRole('img', { name: 'invoke_agent: starts at +0 ms, takes 1000 ms', exact: true }).waitFor();
    await spans().getByRole('img', { name: 'execute_tool lookup: starts at +420 ms, takes 50 ms', exact: true }).waitFor();
    assert.equal(await spans().getByRole('img', { name: /^chat gpt-4o: starts at \+(10|480) ms, takes 400 ms$/ }).count(), 2);
    await assertAccessible('an invocation');

    await page.getByRole('button', { name: 'Back to invocations' }).click();
    await rowOf(older).waitFor();
    await page.waitForFunction((id) => document.activeElement?.id === id, `invocation-${newer}`);
    assert.equal(await spans().count(), 0);
  });

  it('filters by status, opens a row from the keyboard, and marks a failed tool call apart', async () => {
    const { token, agent, sent } = await agentWith('failing', (start) => [invokeTrace({ start }), invokeTrace({ start: start + 5_000, toolError: true })]);
    const [fine, failed] = sent.map((trace) => trace.traceId) as [string, string];
    await openInvocations(token, agent.id);
    await rowOf(fine).waitFor();
    assert.deepEqual(await listedIds(), [failed, fine]);
    assert.equal((await cellsOf(rowOf(failed)))[1], 'error');

    await page.getByLabel('Status').selectOption('error');
    await rowOf(fine).waitFor({ state: 'detached' });
    assert.deepEqual(await listedIds(), [failed]);
    await page.getByLabel('Status').selectOption('ok');
    await rowOf(failed).waitFor({ state: 'detached' });
    assert.deepEqual(await listedIds(), [fine]);
    await page.getByLabel('Status').selectOption('');
    await rowOf(failed).waitFor();

    await opener(failed).focus();
    await page.keyboard.press('Enter');
    await spans().waitFor();
    const [, chat, tool] = await waterfall();
    assert.equal(tool!.details, 'tool lookup · error: tool failed');
    assert.notEqual(tool!.bar, chat!.bar, "a failed span's bar is drawn apart");
    await spans().getByRole('img', { name: 'execute_tool lookup: starts at +420 ms, takes 50 ms, failed', exact: true }).waitFor();
    assert.equal(await page.locator('.invocation-facts [data-status="error"]').innerText(), 'error');
  });

  it('says how traces get there when the agent has none, and when no invocation matches the filters', async () => {
    const { token, agent } = await agentWith('quiet', () => []);
    await openInvocations(token, agent.id);
    await page.getByText('No invocations yet: the default runtime records a trace of every invoke', { exact: false }).waitFor();
    assert.equal(await list().count(), 0);
    assert.equal(await page.getByRole('navigation', { name: 'Pages' }).count(), 0);
    await page.getByLabel('Status').selectOption('error');
    await page.getByText('No invocations match these filters.').waitFor();
  });

  it('pages through more invocations than a page holds', async () => {
    const { token, agent, sent } = await agentWith('busy', (start) => Array.from({ length: 21 }, (_, n) => invokeTrace({ start: start + n * 2_000 })));
    await openInvocations(token, agent.id);
    await rowOf(sent[20]!.traceId).waitFor();
    assert.equal((await listedIds()).length, 20);
    await page.getByText('Page 1 of 2').waitFor();
    await page.getByRole('button', { name: 'Next page' }).click();
    await rowOf(sent[0]!.traceId).waitFor();
    assert.deepEqual(await listedIds(), [sent[0]!.traceId]);
    await page.getByText('Page 2 of 2').waitFor();
  });
});
