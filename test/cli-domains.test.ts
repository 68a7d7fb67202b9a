import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { startControl, type TestControl } from './support/control-harness.js';
import { CliUser } from './support/cli-runner.js';

/** agentctl domains against the real control API and its domain routes. */
describe('agentctl domains', function () {
  this.timeout(120_000);
  let control: TestControl;
  let user: CliUser;
  let agentId: string;

  before(async () => {
    control = await startControl({});
    user = new CliUser({ AGENTCTL_API_URL: control.baseUrl });
    const registered = await user.run(['register', '--email', `cli-domains-${Date.now()}@example.com`, '--password', 'correct horse battery', '--name', 'Cli User']);
    assert.equal(registered.code, 0, registered.stderr);
    agentId = (await user.json(['agents', 'create', '--name', 'site'])).id;
  });
  after(async () => {
    await control?.close();
    if (user) rmSync(user.configHome, { recursive: true, force: true });
  });

  it('adds a domain and prints the TXT record to create; list, get (by hostname or id), verify and rm follow', async () => {
    const added = await user.run(['domains', 'add', 'site', 'WWW.Example.COM.']);
    assert.equal(added.code, 0, added.stderr);
    const record = /^_agent-platform\.www\.example\.com\. TXT "([0-9A-Za-z]{32})"$/.exec(added.stdout.trim());
    assert.ok(record, `the TXT record on stdout: ${added.stdout}`);
    assert.match(added.stderr, /pending_verification/);

    const list = await user.run(['domains', 'list', agentId]);
    assert.equal(list.code, 0, list.stderr);
    assert.match(list.stdout, /^ID\s+HOSTNAME\s+STATUS/);
    assert.match(list.stdout, /www\.example\.com\s+pending_verification/);

    const shown = await user.json(['domains', 'get', 'site', 'www.example.com']);
    assert.equal(shown.verification.value, record[1]);
    const byId = await user.run(['domains', 'get', 'site', shown.id]);
    assert.match(byId.stdout, new RegExp(`txt value\\s+${record[1]}`));

    const verified = await user.run(['domains', 'verify', 'site', 'www.example.com']);
    assert.equal(verified.code, 0, verified.stderr);
    assert.match(verified.stderr, /Asked for a check of www\.example\.com/);

    const removed = await user.run(['domains', 'rm', 'site', 'www.example.com']);
    assert.equal(removed.code, 0, removed.stderr);
    assert.deepEqual((await user.json(['domains', 'list', 'site'])).domains, []);
  });

  it("exits 1 with the API's code for a refused hostname and an unknown domain", async () => {
    const refused = await user.run(['domains', 'add', 'site', 'localhost']);
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /VALIDATION_ERROR: .*at least two labels/);
    const unknown = await user.run(['domains', 'rm', 'site', 'nothing.example.com']);
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr, /NOT_FOUND/);
  });
});
