import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { startControl, type TestControl } from './support/control-harness.js';
import { CliUser } from './support/cli-runner.js';
import { signUpMember } from './support/control-api.js';
import { replicaReadStatus, writeSession } from './support/replica-sessions.js';

/** A port nothing listens on: bound, then released. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const { port } = server.address() as { port: number };
  await new Promise((done) => server.close(done));
  return port;
}

const turn = (n: number, content = `turn ${n}`) => ({ role: n % 2 ? 'assistant' : 'user', content });
/** Bytes of a conversation's messages as JSON: what the platform counts as its size. */
const bytesOf = (turns: unknown[][]) => Buffer.byteLength(JSON.stringify(turns.flat()));

/** A table agentctl printed, as rows of cells: columns are two spaces or more apart, a cell has single spaces at most. */
const rowsOf = (stdout: string) => stdout.trim().split('\n').map((line) => line.trim().split(/\s{2,}/));

/**
 * `agentctl sessions list|rm` (issue 37) against the real control API, with sessions written
 * as replicas write them: through the agent services endpoint with a replica token.
 */
describe('agentctl sessions', function () {
  this.timeout(120_000);

  describe('usage', () => {
    let user: CliUser;
    before(async () => {
      user = new CliUser({ AGENTCTL_API_URL: `http://127.0.0.1:${await closedPort()}/v1`, AGENTCTL_TOKEN: 'unused' });
    });
    after(() => rmSync(user.configHome, { recursive: true, force: true }));

    it('exits 2 before any request (the API is unreachable, which would be exit 3) for a missing argument, an unknown flag, or an empty, . or .. session id', async () => {
      const refused: [string[], RegExp][] = [
        [['sessions'], /Not enough non-option arguments/],
        [['sessions', 'list'], /Not enough non-option arguments/],
        [['sessions', 'rm', 'support-bot'], /Not enough non-option arguments/],
        [['sessions', 'list', 'support-bot', '--bogus'], /Unknown argument: bogus/],
        [['sessions', 'rm', 'support-bot', 'conv-1', 'extra'], /Unknown argument: extra/],
        // A URL reads them as steps of the path: `DELETE …/sessions/..` would name the agent itself.
        [['sessions', 'rm', 'support-bot', '..'], /"\.\." is no session id/],
        [['sessions', 'rm', 'support-bot', '.'], /"\." is no session id/],
        [['sessions', 'rm', 'support-bot', ''], /"" is no session id/],
        [['sessions', 'show', 'support-bot'], /Not enough non-option arguments/],
        [['sessions', 'show', 'support-bot', '..'], /"\.\." is no session id/],
      ];
      for (const [args, message] of refused) {
        const result = await user.run(args);
        assert.equal(result.code, 2, `${args.join(' ')}: ${result.stderr}`);
        assert.match(result.stderr, message, args.join(' '));
      }
      assert.equal((await user.run(['sessions', 'list', 'agt_x'])).code, 3, 'a well-formed command goes on to the API');
    });

    it('has help with examples for list, show and rm, and completes them', async () => {
      for (const verb of ['list', 'show', 'rm']) {
        const help = await user.run(['sessions', verb, '--help']);
        assert.equal(help.code, 0);
        assert.match(help.stdout, new RegExp(`^Examples:\\n {2}agentctl sessions ${verb} support-bot`, 'm'));
      }
      assert.match((await user.run(['--help'])).stdout, /^ {2}agentctl sessions <command> /m);
      const offered = (await user.run(['--get-yargs-completions', 'sessions', ''], { SHELL: '/bin/bash' })).stdout.trim().split('\n');
      assert.deepEqual(offered.sort(), ['list', 'rm', 'show']);
    });
  });

  describe('against the control API', () => {
    let control: TestControl;
    let user: CliUser;
    let token: string;
    let accountId: string;

    before(async () => {
      control = await startControl({});
    });
    beforeEach(async () => {
      const grant = await control.signUp();
      token = grant.token;
      accountId = grant.user.account_id;
      user = new CliUser({ AGENTCTL_API_URL: control.baseUrl, AGENTCTL_TOKEN: token });
    });
    afterEach(() => rmSync(user.configHome, { recursive: true, force: true }));
    after(() => control?.close());

    /** A new agent of the account, made with agentctl, and its slug. */
    async function newAgent(name: string): Promise<{ id: string; name: string; slug: string }> {
      const created = await user.json(['agents', 'create', '--name', name]);
      return { id: created.id, name: created.name, slug: new URL(created.url).hostname.split('.')[0]! };
    }

    /** The API's own listing, as the owner reads it. */
    const apiList = async (agentId: string, query = '') => {
      const response = await control.request('GET', `/agents/${agentId}/sessions${query}`, { token });
      assert.equal(response.status, 200, JSON.stringify(response.body));
      return response.body;
    };

    it('no command sends a name of "." or "..": `keys revoke <agent> ..` would otherwise be DELETE /agents/<id>/ and delete the agent', async () => {
      const agent = await newAgent('keeps itself');
      for (const args of [['keys', 'revoke', agent.slug, '..'], ['keys', 'revoke', agent.slug, '.'], ['deployments', 'get', agent.slug, '..']]) {
        const result = await user.run(args);
        assert.equal(result.code, 2, `${args.join(' ')}: ${result.stdout}${result.stderr}`);
      }
      const still = await control.request('GET', `/agents/${agent.id}`, { token });
      assert.equal(still.status, 200, 'the agent is still there');
    });

    it('lists the sessions most recently used first, with the counts and sizes written, and --json prints the API\'s answer', async () => {
      const agent = await newAgent('remembers');
      const short = [[turn(0), turn(1)]];
      const long = [[turn(0, 'x'.repeat(1500))], [turn(1, 'y'.repeat(1500))], [turn(2)]];
      const shortWritten = await writeSession(control, agent.id, 'conv-short', short);
      control.clock.advance(1000);
      const longWritten = await writeSession(control, agent.id, 'conv-long', long);
      assert.deepEqual([shortWritten.size_bytes, longWritten.size_bytes], [bytesOf(short), bytesOf(long)]);
      assert.ok(bytesOf(short) < 1024 && bytesOf(long) > 3000);

      const result = await user.run(['sessions', 'list', agent.slug]);
      assert.equal(result.code, 0, result.stderr);
      assert.equal(result.stderr, '');
      const listed = await apiList(agent.id);
      assert.deepEqual(rowsOf(result.stdout), [
        ['SESSION ID', 'MESSAGES', 'SIZE', 'LAST USED', 'EXPIRES'],
        ['conv-long', '3', `${(bytesOf(long) / 1024).toFixed(1)} KiB`, listed.sessions[0].last_used_at, listed.sessions[0].expires_at],
        ['conv-short', '2', `${bytesOf(short)} B`, listed.sessions[1].last_used_at, listed.sessions[1].expires_at],
      ]);
      assert.doesNotMatch(result.stdout, /turn 0|xxxx/, 'no message is shown');

      const json = await user.json(['sessions', 'list', agent.name]);
      assert.deepEqual(json, listed);
      assert.deepEqual(json.sessions.map((session: { session_id: string; message_count: number; size_bytes: number }) => [session.session_id, session.message_count, session.size_bytes]), [
        ['conv-long', 3, bytesOf(long)],
        ['conv-short', 2, bytesOf(short)],
      ]);
    });

    it('shows a page at a time with --page and --page-size, saying on stderr where more are', async () => {
      const agent = await newAgent('chatty');
      for (const id of ['a', 'b', 'c']) {
        control.clock.advance(1000);
        await writeSession(control, agent.id, id, [[turn(0)]]);
      }
      const first = await user.run(['sessions', 'list', agent.slug, '--page-size', '2']);
      assert.equal(first.code, 0, first.stderr);
      assert.deepEqual(rowsOf(first.stdout).slice(1).map((row) => row[0]), ['c', 'b']);
      assert.equal(first.stderr.trim(), '3 sessions; this is page 1: --page 2 for more');
      const second = await user.json(['sessions', 'list', agent.slug, '--page', '2', '--page-size', '2']);
      assert.deepEqual(second, await apiList(agent.id, '?page=2&page_size=2'));
      assert.deepEqual(second.sessions.map((session: { session_id: string }) => session.session_id), ['a']);
    });

    it('says so when the agent has no sessions, and exits 1 with NOT_FOUND for an agent of no one', async () => {
      const agent = await newAgent('quiet');
      const result = await user.run(['sessions', 'list', agent.slug]);
      assert.equal(result.code, 0, result.stderr);
      assert.deepEqual(rowsOf(result.stdout), [['SESSION ID', 'MESSAGES', 'SIZE', 'LAST USED', 'EXPIRES']]);
      assert.match(result.stderr, /quiet has no sessions: the agent keeps a conversation when a caller sends a session_id back/);
      assert.deepEqual(await user.json(['sessions', 'list', agent.id]), { sessions: [], total: 0, page: 1, page_size: 20, has_next: false });
      const unknown = await user.run(['sessions', 'list', 'nobody-here']);
      assert.equal(unknown.code, 1);
      assert.match(unknown.stderr, /^agentctl: NOT_FOUND: /);
    });

    it("show prints a session's messages, one JSON message a line, and its size and use on stderr; --json the API's answer; a viewer is refused", async () => {
      const agent = await newAgent('recalls');
      const turns = [[turn(0), turn(1)], [turn(2, 'line one\nline two')]];
      await writeSession(control, agent.id, 'conv-1', turns);

      const result = await user.run(['sessions', 'show', agent.slug, 'conv-1']);
      assert.equal(result.code, 0, result.stderr);
      assert.deepEqual(result.stdout.trim().split('\n').map((line) => JSON.parse(line)), turns.flat(), 'every message, oldest first, each on its own line');
      const answer = (await control.request('GET', `/agents/${agent.id}/sessions/conv-1`, { token })).body;
      assert.equal(result.stderr.trim(), `conv-1 of recalls: 3 messages, ${bytesOf(turns)} B, version 2, last used ${answer.last_used_at}, expires ${answer.expires_at}`);
      assert.deepEqual(await user.json(['sessions', 'show', agent.name, 'conv-1']), answer);

      const missing = await user.run(['sessions', 'show', agent.id, 'never-written']);
      assert.equal(missing.code, 1);
      assert.match(missing.stderr, /^agentctl: SESSION_NOT_FOUND: /);
      const viewer = new CliUser({ AGENTCTL_API_URL: control.baseUrl, AGENTCTL_TOKEN: (await signUpMember(control, accountId, 'viewer')).token });
      try {
        const refused = await viewer.run(['sessions', 'show', agent.slug, 'conv-1']);
        assert.equal(refused.code, 1);
        assert.match(refused.stderr, /^agentctl: AUTHORISATION_DENIED: /);
        assert.equal(refused.stdout, '', 'no message is shown');
      } finally {
        rmSync(viewer.configHome, { recursive: true, force: true });
      }
    });

    it('rm deletes a session, which the list and the replica no longer see; a second rm exits 1 with SESSION_NOT_FOUND', async () => {
      const agent = await newAgent('forgetful');
      await writeSession(control, agent.id, 'conv-1', [[turn(0), turn(1)]]);
      await writeSession(control, agent.id, 'conv-2', [[turn(0)]]);

      const removed = await user.run(['sessions', 'rm', agent.slug, 'conv-1']);
      assert.equal(removed.code, 0, removed.stderr);
      assert.equal(removed.stdout, '');
      assert.equal(removed.stderr.trim(), `Deleted session conv-1 of forgetful (${agent.slug})`);
      assert.deepEqual((await user.json(['sessions', 'list', agent.id])).sessions.map((session: { session_id: string }) => session.session_id), ['conv-2']);
      assert.doesNotMatch((await user.run(['sessions', 'list', agent.id])).stdout, /conv-1/);
      assert.equal(await replicaReadStatus(control, agent.id, 'conv-1'), 404);
      assert.equal(await replicaReadStatus(control, agent.id, 'conv-2'), 200);

      const again = await user.run(['sessions', 'rm', agent.id, 'conv-1']);
      assert.equal(again.code, 1);
      assert.match(again.stderr, /^agentctl: SESSION_NOT_FOUND: /);
      const never = await user.run(['sessions', 'rm', agent.id, 'never-written']);
      assert.equal(never.code, 1);
      assert.match(never.stderr, /^agentctl: SESSION_NOT_FOUND: /);
    });

    it('lets a viewer list but not delete: rm exits 1 with the API\'s AUTHORISATION_DENIED', async () => {
      const agent = await newAgent('watched');
      await writeSession(control, agent.id, 'conv-1', [[turn(0)]]);
      const viewer = new CliUser({ AGENTCTL_API_URL: control.baseUrl, AGENTCTL_TOKEN: (await signUpMember(control, accountId, 'viewer')).token });
      try {
        assert.deepEqual(await viewer.json(['sessions', 'list', agent.slug]), await apiList(agent.id));
        const refused = await viewer.run(['sessions', 'rm', agent.slug, 'conv-1']);
        assert.equal(refused.code, 1);
        assert.match(refused.stderr, /^agentctl: AUTHORISATION_DENIED: /);
        assert.equal(await replicaReadStatus(control, agent.id, 'conv-1'), 200, 'the session is still there');
      } finally {
        rmSync(viewer.configHome, { recursive: true, force: true });
      }
    });
  });
});
