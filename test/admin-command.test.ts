import assert from 'node:assert/strict';
import { parseAdminCommand, UsageError } from '../control/admin-command.js';

describe('npm run admin: the command line', () => {
  it('reads each command and its flags', () => {
    assert.deepEqual(parseAdminCommand(['invite', 'create']), { kind: 'invite', accountId: undefined, role: 'member' });
    assert.deepEqual(parseAdminCommand(['invite', 'create', '--account', 'acc_1', '--role', 'admin']), { kind: 'invite', accountId: 'acc_1', role: 'admin' });
    assert.deepEqual(parseAdminCommand(['invite', 'create', '--account=acc_1']), { kind: 'invite', accountId: 'acc_1', role: 'member' });
    assert.deepEqual(parseAdminCommand(['account', 'plan', 'a@example.com', 'pro']), { kind: 'plan', account: 'a@example.com', plan: 'pro' });
    assert.deepEqual(parseAdminCommand(['account', 'exempt', 'acc_1', 'false']), { kind: 'exempt', account: 'acc_1', exempt: false });
    assert.deepEqual(parseAdminCommand(['user', 'role', 'a@example.com', 'viewer']), { kind: 'role', email: 'a@example.com', role: 'viewer' });
    assert.deepEqual(parseAdminCommand([]), { kind: 'help' });
    assert.deepEqual(parseAdminCommand(['--help']), { kind: 'help' });
  });

  it('refuses a misspelled or misplaced flag instead of ignoring it (an invite for a new account by mistake)', () => {
    assert.throws(() => parseAdminCommand(['invite', 'create', '--acount', 'acc_1']), (error: unknown) => error instanceof UsageError && /Unknown option '--acount'/.test(error.message));
    assert.throws(() => parseAdminCommand(['invite', 'create', '--role', 'admin']), /--role needs --account/);
    assert.throws(() => parseAdminCommand(['account', 'plan', 'acc_1', 'pro', '--account', 'acc_2']), /takes no --account/);
    assert.throws(() => parseAdminCommand(['invite', 'create', '--account']), UsageError);
  });

  it('refuses a missing or extra argument and an unknown command', () => {
    assert.throws(() => parseAdminCommand(['account', 'plan', 'acc_1']), /takes <acc_id\|email> <free\|pro>/);
    assert.throws(() => parseAdminCommand(['user', 'role', 'a@example.com', 'viewer', 'extra']), UsageError);
    assert.throws(() => parseAdminCommand(['account', 'exempt', 'acc_1', 'yes']), /true or false/);
    assert.throws(() => parseAdminCommand(['account', 'delete', 'acc_1']), UsageError);
  });
});
