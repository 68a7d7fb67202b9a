import assert from 'node:assert/strict';
import { parseAdminCommand, UsageError } from '../control/admin/admin-command.js';

describe('npm run admin: the command line', () => {
  it('reads each command and its flags', () => {
    assert.deepEqual(parseAdminCommand(['invite', 'create']), { kind: 'invite', accountId: undefined, role: 'member' });
    assert.deepEqual(parseAdminCommand(['invite', 'create', '--account', 'acc_1', '--role', 'admin']), { kind: 'invite', accountId: 'acc_1', role: 'admin' });
    assert.deepEqual(parseAdminCommand(['invite', 'create', '--account=acc_1']), { kind: 'invite', accountId: 'acc_1', role: 'member' });
    assert.deepEqual(parseAdminCommand(['account', 'plan', 'a@example.com', 'pro']), { kind: 'plan', account: 'a@example.com', plan: 'pro' });
    assert.deepEqual(parseAdminCommand(['account', 'exempt', 'acc_1', 'false']), { kind: 'exempt', account: 'acc_1', exempt: false });
    assert.deepEqual(parseAdminCommand(['user', 'role', 'a@example.com', 'viewer']), { kind: 'role', email: 'a@example.com', role: 'viewer' });
    assert.deepEqual(parseAdminCommand(['user', 'delete', 'a@example.com']), { kind: 'user-delete', email: 'a@example.com' });
    assert.deepEqual(parseAdminCommand([]), { kind: 'help' });
    assert.deepEqual(parseAdminCommand(['--help']), { kind: 'help' });
  });

  it('refuses a misspelled or misplaced flag instead of ignoring it (an invite for a new account by mistake)', () => {
    assert.throws(() => parseAdminCommand(['invite', 'create', '--acount', 'acc_1']), (error: unknown) => error instanceof UsageError && /Unknown option '--acount'/.test(error.message));
    assert.throws(() => parseAdminCommand(['invite', 'create', '--role', 'admin']), /--role needs --account/);
    assert.throws(() => parseAdminCommand(['account', 'plan', 'acc_1', 'pro', '--account', 'acc_2']), /takes no --account/);
    assert.throws(() => parseAdminCommand(['invite', 'create', '--account']), UsageError);
  });

  it('reads keys status and keys rotate, whose row counts are whole and bounded', () => {
    assert.deepEqual(parseAdminCommand(['keys', 'status']), { kind: 'keys-status' });
    assert.deepEqual(parseAdminCommand(['keys', 'rotate']), { kind: 'keys-rotate', batchSize: 100, limit: undefined });
    assert.deepEqual(parseAdminCommand(['keys', 'rotate', '--batch-size', '5', '--limit=20']), { kind: 'keys-rotate', batchSize: 5, limit: 20 });
    for (const bad of ['0', '-1', '1.5', '10001', 'all', '']) {
      assert.throws(() => parseAdminCommand(['keys', 'rotate', `--batch-size=${bad}`]), /--batch-size takes a whole number of rows from 1 to 10000/, bad);
    }
    assert.throws(() => parseAdminCommand(['keys', 'rotate', '--limit', '0']), /--limit takes a whole number/);
    assert.throws(() => parseAdminCommand(['keys', 'status', '--batch-size', '5']), /keys status takes no --batch-size or --limit/);
    assert.throws(() => parseAdminCommand(['keys', 'rotate', 'now']), /keys rotate takes no argument besides --batch-size and --limit/);
    assert.throws(() => parseAdminCommand(['keys', 'rotate', '--batch', '5']), /Unknown option '--batch'/);
    assert.throws(() => parseAdminCommand(['invite', 'create', '--limit', '5']), /invite create takes no --batch-size or --limit/);
  });

  it('refuses a missing or extra argument and an unknown command', () => {
    assert.throws(() => parseAdminCommand(['account', 'plan', 'acc_1']), /takes <acc_id\|email> <free\|pro>/);
    assert.throws(() => parseAdminCommand(['user', 'role', 'a@example.com', 'viewer', 'extra']), UsageError);
    assert.throws(() => parseAdminCommand(['account', 'exempt', 'acc_1', 'yes']), /true or false/);
    assert.throws(() => parseAdminCommand(['user', 'delete']), /user delete takes <email>/);
    assert.throws(() => parseAdminCommand(['user', 'delete', 'a@example.com', 'b@example.com']), /user delete takes <email>/);
    assert.throws(() => parseAdminCommand(['account', 'delete', 'acc_1']), UsageError);
  });
});
