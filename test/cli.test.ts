import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { startControl, type TestControl } from './support/control-harness.js';
import { CliUser, ROOT } from './support/cli-runner.js';

const run = promisify(execFile);

/** A port nothing listens on: bound, then released. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const { port } = server.address() as { port: number };
  await new Promise((done) => server.close(done));
  return port;
}

/** agentctl against the real control API (no orchestration): every command that needs no running agent. */
describe('agentctl', function () {
  this.timeout(120_000);
  let control: TestControl;
  let user: CliUser;
  const password = 'correct horse battery';
  const email = `cli-${Date.now()}@example.com`;

  before(async () => {
    control = await startControl({});
    user = new CliUser({ AGENTCTL_API_URL: control.baseUrl });
    const registered = await user.run(['register', '--email', email, '--password', password, '--name', 'Cli User']);
    assert.equal(registered.code, 0, registered.stderr);
  });
  after(async () => {
    await control?.close();
    rmSync(user.configHome, { recursive: true, force: true });
  });

  it('`npx agentctl --help` runs from the repository and lists every group of commands', async () => {
    const { stdout } = await run('npx', ['agentctl', '--help'], { cwd: ROOT });
    for (const name of ['auth', 'agents', 'deployments', 'env', 'secrets', 'keys', 'api-keys', 'domains', 'sessions', 'usage', 'audit', 'context', 'version', 'completion']) {
      assert.match(stdout, new RegExp(`agentctl ${name}\\b`), name);
    }
  });

  it('exits 2 for an unknown flag, a missing argument or no command, with help for every command', async () => {
    assert.equal((await user.run(['agents', 'list', '--bogus'])).code, 2);
    assert.equal((await user.run(['agents', 'get'])).code, 2);
    assert.equal((await user.run([])).code, 2);
    assert.equal((await user.run(['agents', 'scale', 'x', 'many'])).code, 2);
    const help = await user.run(['agents', 'create', '--help']);
    assert.equal(help.code, 0);
    assert.match(help.stdout, /--system-prompt-file/);
    assert.match((await user.run(['completion'])).stdout, /--get-yargs-completions/);
  });

  it('exits 3 when the platform cannot be reached', async () => {
    const result = await user.run(['whoami', '--api', `http://127.0.0.1:${await closedPort()}/v1`]);
    assert.equal(result.code, 3);
    assert.match(result.stderr, /cannot reach/);
  });

  it('keeps the session in a 0600 config file in a 0700 directory, and whoami reads it', async () => {
    assert.equal(statSync(user.configPath).mode & 0o777, 0o600);
    assert.equal(statSync(join(user.configHome, 'agentctl')).mode & 0o777, 0o700);
    assert.equal((await user.json(['whoami'])).email, email);
  });

  it('logs out and in; the password flag needs no prompt, and without it and a terminal it is a usage error', async () => {
    const other = new CliUser({ AGENTCTL_API_URL: control.baseUrl });
    try {
      const refused = await other.run(['whoami']);
      assert.equal(refused.code, 1);
      assert.match(refused.stderr, /AUTHENTICATION_REQUIRED|AUTHENTICATION_FAILED/);
      assert.equal((await other.run(['login', '--email', email])).code, 2);
      const wrong = await other.run(['login', '--email', email, '--password', 'not the password']);
      assert.equal(wrong.code, 1);
      assert.match(wrong.stderr, /AUTHENTICATION_FAILED/);
      const grant = await other.json(['login', '--email', email, '--password', password]);
      assert.equal(grant.user.email, email);
      assert.equal(statSync(other.configPath).mode & 0o777, 0o600);
      assert.equal((await other.run(['logout'])).code, 0);
      assert.equal(existsSync(other.configPath), false);
      assert.equal((await control.request('GET', '/auth/me', { token: grant.token })).status, 401, 'logout ended the session at the API');
      assert.equal((await other.run(['whoami'])).code, 1);
    } finally {
      rmSync(other.configHome, { recursive: true, force: true });
    }
  });

  it('takes AGENTCTL_TOKEN over the config file', async () => {
    const stranger = new CliUser({ AGENTCTL_API_URL: control.baseUrl });
    const { token } = await control.signUp();
    assert.notEqual((await stranger.json(['whoami'], { AGENTCTL_TOKEN: token })).email, email);
    rmSync(stranger.configHome, { recursive: true, force: true });
  });

  it('creates, lists, gets (by id, slug and name), scales, redeploys and deletes agents', async () => {
    const created = await user.json(['agents', 'create', '--name', 'cli bot', '--tag', 'cli', '--env', 'A=1', '--secret', 'S=hush', '--replicas', '0']);
    assert.equal(created.name, 'cli bot');
    assert.deepEqual(created.deploy.env.map((e: { key: string; value: string }) => `${e.key}=${e.value}`), ['A=1', 'S=***']);
    const slug = new URL(created.url).hostname.split('.')[0]!;
    for (const reference of [created.id, slug, 'cli bot']) assert.equal((await user.json(['agents', 'get', reference])).id, created.id);
    const listed = await user.json(['agents', 'list', '--tag', 'cli']);
    assert.deepEqual(listed.agents.map((a: { id: string }) => a.id), [created.id]);
    assert.match((await user.run(['agents', 'list'])).stdout, /^ID\s+SLUG\s+NAME/);

    const scaled = await user.json(['agents', 'scale', slug, '2']);
    assert.equal(scaled.current_replicas, 2);
    // No replica ever runs on the in-memory driver, so the rollout is not followed.
    const redeployed = await user.json(['agents', 'deploy', '--env', 'A=2', slug, '--detach']);
    assert.equal(redeployed.deploy.env[0].value, '2');

    assert.equal((await user.run(['agents', 'delete', slug])).code, 2, 'no --yes and no terminal to ask on');
    assert.equal((await user.run(['agents', 'delete', slug, '--yes'])).code, 0);
    const gone = await user.run(['agents', 'get', created.id]);
    assert.equal(gone.code, 1);
    assert.match(gone.stderr, /NOT_FOUND/);
  });

  it('refuses an unknown agent with exit 1 and a name two agents share with exit 2', async () => {
    await user.json(['agents', 'create', '--name', 'twin']);
    await user.json(['agents', 'create', '--name', 'twin']);
    const ambiguous = await user.run(['agents', 'get', 'twin']);
    assert.equal(ambiguous.code, 2);
    assert.match(ambiguous.stderr, /2 agents are named "twin"/);
    assert.equal((await user.run(['agents', 'get', 'nobody-here'])).code, 1);
    assert.equal((await user.run(['agents', 'create', '--name', 'x', '--env', 'novalue'])).code, 2);
  });

  it('creates, lists and revokes access keys and personal API keys, printing a new key once', async () => {
    const agent = await user.json(['agents', 'create', '--name', 'keyed']);
    const key = await user.run(['keys', 'create', agent.id, '--label', 'ci']);
    assert.equal(key.code, 0, key.stderr);
    assert.match(key.stdout.trim(), /^agk_/);
    const keys = (await user.json(['keys', 'list', agent.id])).access_keys;
    const ci = keys.find((k: { label: string }) => k.label === 'ci');
    assert.ok(ci && !JSON.stringify(keys).includes(key.stdout.trim()));
    assert.equal((await user.run(['keys', 'revoke', agent.id, ci.id])).code, 0);
    assert.equal((await user.json(['keys', 'list', agent.id])).access_keys.some((k: { id: string }) => k.id === ci.id), false);

    const apiKey = await user.json(['api-keys', 'create', '--label', 'laptop']);
    assert.match(apiKey.key, /^agnt_/);
    assert.equal((await user.json(['whoami'], { AGENTCTL_TOKEN: apiKey.key })).email, email);
    assert.ok((await user.json(['api-keys', 'list'])).api_keys.some((k: { id: string }) => k.id === apiKey.id));
    assert.equal((await user.run(['api-keys', 'revoke', apiKey.id])).code, 0);
    assert.equal((await user.run(['whoami'], { AGENTCTL_TOKEN: apiKey.key })).code, 1);
  });

  it('shows usage against the plan limits', async () => {
    const usage = await user.json(['usage']);
    assert.equal(typeof usage.limits.max_agents, 'number');
    assert.match((await user.run(['usage'])).stdout, /agents\s+\d+\s+\d+/);
  });

  it('lists deployments and rolls back to one by number', async () => {
    const agent = await user.json(['agents', 'create', '--name', 'history', '--env', 'V=1', '--replicas', '0']);
    await user.json(['agents', 'deploy', agent.id, '--env', 'V=2']);
    const history = await user.json(['deployments', agent.id]);
    assert.deepEqual(history.deployments.map((d: { number: number }) => d.number), [2, 1]);
    const rolledBack = await user.json(['rollback', agent.id, '1']);
    assert.equal(rolledBack.deploy.env[0].value, '1');
    const after = await user.json(['deployments', agent.id]);
    assert.equal(after.deployments[0].rollback_of, history.deployments[1].id);
    assert.equal((await user.run(['rollback', agent.id, '9'])).code, 1);
  });

  it('shows the audit log filtered by action and agent (by name or id), and exits 1 for an action the API refuses', async () => {
    const agent = await user.json(['agents', 'create', '--name', 'audited by cli']);
    const events = await user.json(['audit', '--action', 'agent.create', '--agent', 'audited by cli']);
    assert.deepEqual(events.events.map((e: { action: string; target: { id: string } }) => [e.action, e.target.id]), [['agent.create', agent.id]]);
    const shown = await user.run(['audit', '--agent', agent.id]);
    assert.equal(shown.code, 0, shown.stderr);
    assert.match(shown.stdout, new RegExp(`agent\\.create\\s+${email.replace(/[.]/g, '\\.')}\\s+agent ${agent.id}`));
    assert.equal((await user.run(['audit', '--action', 'agent.explode'])).code, 1);
  });

  it('compiles to JavaScript that runs without tsx (npm run build:cli)', async () => {
    const out = mkdtempSync(join(ROOT, '.cli-build-'));
    try {
      await run('npx', ['tsc', '-p', 'tsconfig.cli.json', '--outDir', out], { cwd: ROOT });
      const { stdout } = await run(process.execPath, [join(out, 'cli', 'main.js'), 'agents', '--help'], { cwd: ROOT });
      assert.match(stdout, /agentctl agents invoke/);
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  });
});
