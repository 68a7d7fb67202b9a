import assert from 'node:assert/strict';
import { readFileSync, rmSync } from 'node:fs';
import { startControl, type TestControl } from './support/control-harness.js';
import { expectStatus } from './support/control-api.js';
import { CliUser } from './support/cli-runner.js';

/** agentctl team and accounts against the real control API (issue 39). */
describe('agentctl team and accounts', function () {
  this.timeout(120_000);
  let control: TestControl;
  let alice: CliUser;
  let bob: CliUser;
  const stamp = Date.now();
  const bobEmail = `cli-team-bob-${stamp}@example.com`;

  const register = async (user: CliUser, email: string) => {
    const registered = await user.run(['auth', 'register', '--email', email, '--password', 'correct horse battery', '--name', email.split('@')[0]!]);
    assert.equal(registered.code, 0, registered.stderr);
  };
  const stored = (user: CliUser) => JSON.parse(readFileSync(user.configPath, 'utf8')).contexts.default;

  before(async () => {
    control = await startControl({});
    alice = new CliUser({ AGENTCTL_API_URL: control.baseUrl });
    bob = new CliUser({ AGENTCTL_API_URL: control.baseUrl });
    await register(alice, `cli-team-alice-${stamp}@example.com`);
    await register(bob, bobEmail);
  });
  after(async () => {
    await control?.close();
    for (const user of [alice, bob]) if (user) rmSync(user.configHome, { recursive: true, force: true });
  });

  it('invites, lists, accepts, switches accounts, changes the role and removes', async () => {
    const aliceAgent = (await alice.json(['agents', 'create', '--name', 'alice-bot'])).id;
    const aliceAccount = (await alice.json(['auth', 'whoami'])).account_id;

    const invited = await alice.run(['team', 'invite', bobEmail, '--role', 'admin']);
    assert.equal(invited.code, 0, invited.stderr);
    const link = invited.stdout.trim();
    assert.match(link, /\/invites#invite_[0-9A-Za-z]{43}$/);
    assert.match(invited.stderr, new RegExp(`Invited ${bobEmail} as admin \\(inv_`));
    const pending = await alice.run(['team', 'list']);
    assert.match(pending.stdout, new RegExp(`inv_\\S+\\s+${bobEmail}\\s+admin\\s+invited until`));

    // Bob accepts the link signed in (what the console does with it), with his agentctl session.
    const accepted = await control.request('POST', `/auth/invites/${link.split('#')[1]}/accept`, { token: stored(bob).token });
    expectStatus(accepted, 200);

    const listed = await bob.json(['accounts', 'list']);
    assert.equal(listed.accounts.length, 2);
    assert.notEqual(listed.current, aliceAccount);
    assert.deepEqual((await bob.json(['agents', 'list'])).agents, []);

    const used = await bob.run(['accounts', 'use', aliceAccount]);
    assert.equal(used.code, 0, used.stderr);
    assert.equal(stored(bob).account_id, aliceAccount);
    assert.deepEqual((await bob.json(['agents', 'list'])).agents.map((agent: any) => agent.id), [aliceAgent]);
    const table = await bob.run(['accounts', 'list']);
    assert.match(table.stdout, new RegExp(`^\\*\\s+${aliceAccount}\\s+admin`, 'm'));
    const refused = await bob.run(['accounts', 'use', 'acc_notmine00000000000']);
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /you do not belong to acc_notmine/);

    const members = await alice.run(['team', 'list']);
    assert.match(members.stdout, new RegExp(`usr_\\S+\\s+${bobEmail}\\s+admin\\s+member`));
    const changed = await alice.run(['team', 'role', bobEmail.toUpperCase(), 'viewer']);
    assert.equal(changed.code, 0, changed.stderr);
    assert.match(changed.stderr, /is viewer/);
    const lastOwner = await alice.run(['team', 'role', `cli-team-alice-${stamp}@example.com`, 'admin']);
    assert.equal(lastOwner.code, 1);
    assert.match(lastOwner.stderr, /LAST_OWNER/);

    const again = await alice.json(['team', 'invite', `cli-team-carol-${stamp}@example.com`]);
    assert.equal(again.role, 'member');
    const revoked = await alice.run(['team', 'rm', again.id]);
    assert.equal(revoked.code, 0, revoked.stderr);
    assert.deepEqual((await alice.json(['team', 'list'])).invites, []);

    const removed = await alice.run(['team', 'rm', bobEmail]);
    assert.equal(removed.code, 0, removed.stderr);
    const outside = await bob.run(['agents', 'list']);
    assert.equal(outside.code, 1);
    assert.match(outside.stderr, /AUTHORISATION_DENIED/);
    const unknown = await alice.run(['team', 'rm', bobEmail]);
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr, /no user/);
  });
});
