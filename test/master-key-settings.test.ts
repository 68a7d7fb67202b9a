import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadAdminMasterKeys, loadConfig } from '../control/config/config.js';
import { ConfigError } from '../contract/settings-reader.js';

const BASE = { DATABASE_URL: 'postgres://u:p@127.0.0.1/db', REDIS_URL: 'redis://127.0.0.1:6379' };
const key = () => randomBytes(32).toString('base64');

function problemsOf(env: Record<string, string>): string[] {
  try {
    loadConfig({ ...BASE, ...env });
  } catch (error) {
    if (error instanceof ConfigError) return [...error.problems];
    throw error;
  }
  return [];
}

const keysOf = (env: Record<string, string>) => loadConfig({ ...BASE, ...env }).masterKeys.map((k) => k.toString('base64'));

describe('MASTER_KEYS and MASTER_KEY (control/config/master-key-settings.ts)', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'master-keys-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('reads MASTER_KEYS in order, the current key first, separated by commas or newlines', () => {
    const [a, b, c] = [key(), key(), key()];
    assert.deepEqual(keysOf({ MASTER_KEYS: `${a},${b}` }), [a, b]);
    assert.deepEqual(keysOf({ MASTER_KEYS: ` ${a} ,\n${b}\n${c}\n` }), [a, b, c]);
  });

  it('reads MASTER_KEYS_FILE, one key a line, # lines being comments', () => {
    const [a, b] = [key(), key()];
    const file = join(dir, 'keys');
    writeFileSync(file, `# current, since 2026-11-23\n${a}\n\n# the first key\n${b}\n`);
    assert.deepEqual(keysOf({ MASTER_KEYS_FILE: file }), [a, b]);
  });

  it('keeps MASTER_KEY and MASTER_KEY_FILE working, as a list of one', () => {
    const a = key();
    assert.deepEqual(keysOf({ MASTER_KEY: a }), [a]);
    const file = join(dir, 'one');
    writeFileSync(file, `${a}\n`);
    assert.deepEqual(keysOf({ MASTER_KEY_FILE: file }), [a]);
  });

  it('refuses two ways at once, naming both', () => {
    assert.deepEqual(problemsOf({ MASTER_KEY: key(), MASTER_KEYS: key() }), [
      'MASTER_KEYS and MASTER_KEY: set only one of them (MASTER_KEYS lists the current key first, then older ones)',
    ]);
    assert.deepEqual(problemsOf({ MASTER_KEYS_FILE: '/nonexistent', MASTER_KEY_FILE: '/nonexistent' }), [
      'MASTER_KEYS_FILE and MASTER_KEY_FILE: set only one of them (MASTER_KEYS lists the current key first, then older ones)',
    ]);
  });

  it('names the bad key by its place, never its value, with every other problem in one ConfigError', () => {
    const good = key();
    const short = randomBytes(16).toString('base64');
    const problems = problemsOf({ MASTER_KEYS: `${good},${short},not base64!,${good}`, CONTROL_PORT: '70000' });
    assert.deepEqual(problems, [
      'CONTROL_PORT: expected an integer from 0 to 65535, got "70000"',
      'MASTER_KEYS: key 2 of 4 must decode from base64 to exactly 32 bytes (openssl rand -base64 32), got 16',
      'MASTER_KEYS: key 3 of 4 is not base64 (openssl rand -base64 32 makes a key)',
      'MASTER_KEYS: key 4 of 4 repeats key 1: each key once, the current first',
    ]);
    assert.ok(!problems.join('\n').includes(good) && !problems.join('\n').includes(short), 'a key in a message');
  });

  it('refuses a list in MASTER_KEY, an empty list, no key at all, and an unreadable file', () => {
    assert.deepEqual(problemsOf({ MASTER_KEY: `${key()},${key()}` }), ['MASTER_KEY: holds one key; give several (the current first) in MASTER_KEYS or MASTER_KEYS_FILE']);
    assert.deepEqual(problemsOf({ MASTER_KEYS: ' , ' }), ['MASTER_KEYS: holds no key']);
    assert.deepEqual(problemsOf({}), [
      'MASTER_KEYS, MASTER_KEYS_FILE, MASTER_KEY or MASTER_KEY_FILE: one is required, 32 bytes in base64 each (openssl rand -base64 32); they encrypt model keys and secrets at rest',
    ]);
    assert.match(problemsOf({ MASTER_KEYS_FILE: join(dir, 'missing') })[0]!, /^MASTER_KEYS_FILE: cannot read .*missing/);
  });

  it('npm run admin reads the same settings, or the key file npm run up keeps in PLATFORM_DATA_DIR', () => {
    const [a, b] = [key(), key()];
    assert.deepEqual(loadAdminMasterKeys({ MASTER_KEYS: `${a},${b}` }).map((k) => k.toString('base64')), [a, b]);
    writeFileSync(join(dir, 'master.key'), `${b}\n${a}\n`);
    assert.deepEqual(loadAdminMasterKeys({ PLATFORM_DATA_DIR: dir }).map((k) => k.toString('base64')), [b, a]);
    // Another database than up's: its keys must be given, not guessed from .data/.
    assert.throws(() => loadAdminMasterKeys({ PLATFORM_DATA_DIR: dir, DATABASE_URL: 'postgres://elsewhere/db' }), /one is required/);
  });
});
