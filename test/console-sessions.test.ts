import assert from 'node:assert/strict';
import type { Browser, Page } from 'playwright-core';
import { accessibilityProblems } from './support/accessibility.js';
import { buildConsole, launchChromium, openAgentTab } from './support/browser.js';
import { startControl, type TestControl } from './support/control-harness.js';
import { createAgent, expectStatus, signUpMember } from './support/control-api.js';
import { replicaReadStatus, writeSession } from './support/replica-sessions.js';
import { auditEvents } from './support/audit.js';

const turn = (n: number, content = `turn ${n}`) => ({ role: n % 2 ? 'assistant' : 'user', content });

/**
 * The agent page's Sessions tab (issue 37) in real Chromium: the conversations the agent's
 * replicas keep, written through the agent services endpoint as a replica writes them, one
 * session's messages opened, and Delete after confirmation. test/agent-sessions.test.ts covers the API behind it.
 */
describe('the web console: sessions', function () {
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

  /** The page signed in with `token`, on the Sessions tab of `agentId`. */
  async function openSessions(token: string, agentId: string): Promise<void> {
    await openAgentTab(page, root, token, agentId, 'Sessions');
  }

  const table = () => page.getByRole('table', { name: 'Sessions' });
  /** The table's row of one session. */
  const rowOf = (sessionId: string) => table().getByRole('row').filter({ has: page.getByRole('cell', { name: sessionId, exact: true }) });
  const listed = async (agentId: string, token: string) => {
    const response = await control.request('GET', `/agents/${agentId}/sessions`, { token });
    expectStatus(response, 200);
    return response.body.sessions as { session_id: string; last_used_at: string; expires_at: string }[];
  };

  it('lists the sessions with their messages, size and times; Delete, after confirmation, removes the row and the session', async () => {
    const { token } = await control.signUp();
    const agent = await createAgent(control, token, { name: 'remembers' });
    const short = [[turn(0), turn(1)]];
    const long = [[turn(0, 'x'.repeat(2000))], [turn(1)]];
    const shortWritten = await writeSession(control, agent.id, 'conv-short', short);
    control.clock.advance(1000);
    const longWritten = await writeSession(control, agent.id, 'conv-long', long);

    await openSessions(token, agent.id);
    await rowOf('conv-long').waitFor();
    const rows = await table().getByRole('row').allInnerTexts();
    assert.deepEqual(rows.slice(1).map((row) => row.split('\t')[0]!.trim()), ['conv-long', 'conv-short'], 'most recently used first');
    assert.deepEqual((await rowOf('conv-short').getByRole('cell').allInnerTexts()).slice(0, 3), ['conv-short', '2', `${shortWritten.size_bytes} B`]);
    assert.deepEqual((await rowOf('conv-long').getByRole('cell').allInnerTexts()).slice(0, 3), ['conv-long', '2', `${(longWritten.size_bytes / 1024).toFixed(1)} KiB`]);
    const [newest] = await listed(agent.id, token);
    assert.deepEqual(await rowOf('conv-long').locator('time').evaluateAll((times) => times.map((time) => time.getAttribute('datetime'))), [newest!.last_used_at, newest!.expires_at]);
    assert.doesNotMatch(await table().innerText(), /turn 0|xxxx/, 'no message is shown');

    for (const viewport of [DESKTOP, PHONE]) {
      await page.setViewportSize(viewport);
      assert.deepEqual(await accessibilityProblems(page), [], `the sessions tab at ${viewport.width} px`);
    }
    await page.setViewportSize(DESKTOP);

    // Asked, the keyboard goes to the safe answer; kept, nothing happened.
    await page.getByRole('button', { name: 'Delete session conv-short' }).click();
    const confirm = page.getByRole('group', { name: 'Confirm deleting session conv-short' });
    await confirm.getByText('Delete session conv-short and its 2 messages?', { exact: false }).waitFor();
    await page.waitForFunction(() => document.activeElement?.textContent === 'Keep it');
    await page.keyboard.press('Enter');
    await page.getByRole('button', { name: 'Delete session conv-short' }).waitFor();
    assert.equal(await replicaReadStatus(control, agent.id, 'conv-short'), 200);

    await page.getByRole('button', { name: 'Delete session conv-short' }).click();
    await confirm.getByRole('button', { name: 'Yes, delete' }).click();
    await rowOf('conv-short').waitFor({ state: 'detached' });
    await page.getByRole('status').getByText('Session conv-short deleted.').waitFor();
    assert.deepEqual((await listed(agent.id, token)).map((session) => session.session_id), ['conv-long']);
    assert.equal(await replicaReadStatus(control, agent.id, 'conv-short'), 404);
    await rowOf('conv-long').waitFor();
    assert.equal(await page.getByRole('alert').count(), 0);
  });

  it("opens a session's messages below its row for a writer, oldest first: a chat message as its role and text, any other as its JSON; each open is audited", async () => {
    const { token } = await control.signUp();
    const agent = await createAgent(control, token, { name: 'recalls' });
    const toolCall = { tool: 'lookup', args: { order: 1042 } };
    await writeSession(control, agent.id, 'conv-1', [[turn(0), turn(1, 'line one\nline two')], [toolCall]]);
    await writeSession(control, agent.id, 'conv-2', [[turn(0, 'another conversation')]]);
    await openSessions(token, agent.id);

    const opener = page.getByRole('button', { name: 'Messages of session conv-1' });
    await opener.click();
    const conversation = page.getByRole('list', { name: 'Conversation of session conv-1' });
    await conversation.waitFor();
    assert.deepEqual(await conversation.getByRole('listitem').allInnerTexts(), ['user: turn 0', 'assistant: line one\nline two', JSON.stringify(toolCall, null, 2)]);
    assert.equal(await opener.getAttribute('aria-expanded'), 'true');
    assert.doesNotMatch(await table().innerText(), /another conversation/, 'only the session opened');
    for (const viewport of [DESKTOP, PHONE]) {
      await page.setViewportSize(viewport);
      assert.deepEqual(await accessibilityProblems(page), [], `the sessions tab with messages open at ${viewport.width} px`);
    }
    await page.setViewportSize(DESKTOP);
    assert.equal((await auditEvents(control, token, `agent_id=${agent.id}&action=session.read`)).length, 1, 'the read is in the audit log');

    await opener.click();
    await conversation.waitFor({ state: 'detached' });
    assert.equal(await opener.getAttribute('aria-expanded'), 'false');
  });

  it("shows the API's message when a delete is refused, and drops the row of a session gone meanwhile", async () => {
    const { token } = await control.signUp();
    const agent = await createAgent(control, token, { name: 'raced' });
    await writeSession(control, agent.id, 'conv-1', [[turn(0)]]);
    await writeSession(control, agent.id, 'conv-2', [[turn(0)]]);
    await openSessions(token, agent.id);
    await rowOf('conv-1').waitFor();
    // Deleted behind the page's back (another tab, agentctl): the page's delete meets the API's 404.
    expectStatus(await control.request('DELETE', `/agents/${agent.id}/sessions/conv-1`, { token }), 204);

    await page.getByRole('button', { name: 'Delete session conv-1' }).click();
    await page.getByRole('group', { name: 'Confirm deleting session conv-1' }).getByRole('button', { name: 'Yes, delete' }).click();
    await page.getByRole('alert').getByText('The agent has no such session, or it expired').waitFor();
    await rowOf('conv-1').waitFor({ state: 'detached' });
    await rowOf('conv-2').waitFor();
  });

  it('shows the empty state for an agent with no sessions', async () => {
    const { token } = await control.signUp();
    const agent = await createAgent(control, token, { name: 'quiet' });
    await openSessions(token, agent.id);
    await page.getByText('No sessions yet: the agent keeps a conversation here when a caller sends a session_id back.').waitFor();
    assert.equal(await table().count(), 0);
    assert.equal(await page.getByRole('navigation', { name: 'Pages' }).count(), 0);
  });

  it('pages through more sessions than a page holds, going back a page when its last session is deleted', async () => {
    const { token } = await control.signUp();
    const agent = await createAgent(control, token, { name: 'chatty' });
    for (let n = 0; n < 21; n++) {
      control.clock.advance(1000);
      await writeSession(control, agent.id, `conv-${String(n).padStart(2, '0')}`, [[turn(n)]]);
    }
    await openSessions(token, agent.id);
    await rowOf('conv-20').waitFor();
    assert.equal(await table().getByRole('row').count(), 21, 'a header and 20 sessions');
    await page.getByText('Page 1 of 2').waitFor();
    // A conversation left open is closed by a change of page: coming back does not show it again.
    await page.getByRole('button', { name: 'Messages of session conv-20' }).click();
    await page.getByRole('list', { name: 'Conversation of session conv-20' }).waitFor();
    await page.getByRole('button', { name: 'Next page' }).click();
    await rowOf('conv-00').waitFor();
    await page.getByRole('button', { name: 'Previous page' }).click();
    await rowOf('conv-20').waitFor();
    assert.equal(await page.getByRole('list', { name: 'Conversation of session conv-20' }).count(), 0);
    assert.equal(await page.getByRole('button', { name: 'Messages of session conv-20' }).getAttribute('aria-expanded'), 'false');

    await page.getByRole('button', { name: 'Next page' }).click();
    await rowOf('conv-00').waitFor();
    await page.getByText('Page 2 of 2').waitFor();

    await page.getByRole('button', { name: 'Delete session conv-00' }).click();
    await page.getByRole('group', { name: 'Confirm deleting session conv-00' }).getByRole('button', { name: 'Yes, delete' }).click();
    await rowOf('conv-20').waitFor();
    await page.getByRole('navigation', { name: 'Pages' }).waitFor({ state: 'detached' });
    assert.equal(await table().getByRole('row').count(), 21);
    assert.equal((await listed(agent.id, token)).length, 20);
  });

  it('lists the sessions to a viewer without a Messages or Delete button', async () => {
    const owner = await control.signUp();
    const agent = await createAgent(control, owner.token, { name: 'watched' });
    await writeSession(control, agent.id, 'conv-1', [[turn(0)]]);
    const viewer = await signUpMember(control, owner.user.account_id, 'viewer');
    await openSessions(viewer.token, agent.id);
    // The tab draws the table once it knows the role: no Delete can appear after the rows.
    await rowOf('conv-1').waitFor();
    assert.equal(await page.getByRole('button', { name: /^Delete session/ }).count(), 0);
    assert.equal(await page.getByRole('button', { name: /^Messages of session/ }).count(), 0);
    assert.equal(await table().getByRole('button').count(), 0);
  });
});
