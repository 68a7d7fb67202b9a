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

    // Bob accepts the link signed in, with his agentctl session; the link is taken once.
    const accepted = await bob.run(['accounts', 'join', link]);
    assert.equal(accepted.code, 0, accepted.stderr);
    assert.match(accepted.stderr, new RegExp(`^Joined ${aliceAccount} as admin: agentctl accounts use selects it$`, 'm'));
    const twice = await bob.run(['accounts', 'join', link]);
    assert.equal(twice.code, 1);
    assert.match(twice.stderr, /INVITE_NOT_FOUND/);

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
    // Every command of his context is refused in the account he left, and says how to pick another.
    const outside = await bob.run(['agents', 'list']);
    assert.equal(outside.code, 1);
    assert.match(outside.stderr, new RegExp(`AUTHORISATION_DENIED: .*the account in use is ${aliceAccount}: agentctl accounts list shows yours`));
    const left = await bob.run(['accounts', 'list', '--json']);
    assert.equal(left.code, 0, left.stderr);
    assert.match(left.stderr, new RegExp(`The account in use, ${aliceAccount}, is no longer one of yours`));
    assert.deepEqual(JSON.parse(left.stdout).accounts.map((row: { current: boolean }) => row.current), [false]);
    const unknown = await alice.run(['team', 'rm', bobEmail]);
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr, /no user/);
  });

  it('`accounts join` signed out registers as the invited email and signs in; --use acts in the joined account; a bad link is a usage error', async () => {
    const aliceAccount = (await alice.json(['auth', 'whoami'])).account_id;
    const daveEmail = `cli-team-dave-${stamp}@example.com`;
    const dave = new CliUser({ AGENTCTL_API_URL: control.baseUrl });
    try {
      const linkForDave = (await alice.run(['team', 'invite', daveEmail, '--role', 'viewer'])).stdout.trim();
      const unnamed = await dave.run(['accounts', 'join', linkForDave]);
      assert.equal(unnamed.code, 2);
      assert.match(unnamed.stderr, /not signed in: give --name/);
      const registered = await dave.run(['accounts', 'join', linkForDave, '--name', 'Dave', '--password', 'correct horse battery']);
      assert.equal(registered.code, 0, registered.stderr);
      assert.match(registered.stdout, new RegExp(`^Signed in as ${daveEmail} until `));
      const me = await dave.json(['auth', 'whoami']);
      assert.deepEqual([me.email, me.account_id, me.role], [daveEmail, aliceAccount, 'viewer']);

      // Bob, signed in and outside since his removal, joins again and acts there at once.
      const linkForBob = (await alice.run(['team', 'invite', bobEmail, '--role', 'member'])).stdout.trim();
      const named = await bob.run(['accounts', 'join', linkForBob, '--name', 'Bob again']);
      assert.equal(named.code, 2, 'signed in, --name would register someone else: refused, the link kept');
      assert.match(named.stderr, /--name and --password register a new user, so sign out first/);
      const joined = await bob.json(['accounts', 'join', linkForBob.split('#')[1]!, '--use']);
      assert.deepEqual(joined, { account_id: aliceAccount, role: 'member', default: false });
      assert.equal(stored(bob).account_id, aliceAccount);
      assert.equal((await bob.run(['agents', 'list'])).code, 0);

      const bad = await bob.run(['accounts', 'join', 'https://console.example.com/invites']);
      assert.equal(bad.code, 2);
      assert.match(bad.stderr, /not an invite link/);
    } finally {
      rmSync(dave.configHome, { recursive: true, force: true });
    }
  });
});
