import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { loadEnvFile } from '../contract/env-file.js';
import { ConfigError } from '../contract/settings-reader.js';

const ROOT = resolve(import.meta.dirname, '..');
/** tsx by path: the children run in a folder of their own, where `--import tsx` would not resolve. */
const TSX = import.meta.resolve('tsx');

describe('.env and --env-file', () => {
  let dir: string;
  const names = ['ENV_FILE_TEST_FROM_FILE', 'ENV_FILE_TEST_BOTH', 'ENV_FILE_TEST_OTHER'];

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'env-file-'));
  });
  afterEach(() => {
    for (const name of names) delete process.env[name];
    rmSync(dir, { recursive: true, force: true });
  });

  it("loads .env from the working directory with Node's loadEnvFile; the environment wins over it", () => {
    writeFileSync(join(dir, '.env'), '# a comment\nENV_FILE_TEST_FROM_FILE=from-file\nENV_FILE_TEST_BOTH="from file"\n');
    process.env.ENV_FILE_TEST_BOTH = 'from-environment';
    assert.equal(loadEnvFile(process.env, [], dir), join(dir, '.env'));
    assert.equal(process.env.ENV_FILE_TEST_FROM_FILE, 'from-file');
    assert.equal(process.env.ENV_FILE_TEST_BOTH, 'from-environment');
  });

  it('loads the file --env-file names instead of .env, and ENV_FILE when there is no flag', () => {
    writeFileSync(join(dir, '.env'), 'ENV_FILE_TEST_FROM_FILE=dot-env\n');
    writeFileSync(join(dir, 'flag.env'), 'ENV_FILE_TEST_OTHER=flag\n');
    writeFileSync(join(dir, 'setting.env'), 'ENV_FILE_TEST_OTHER=setting\n');
    assert.equal(loadEnvFile({ ENV_FILE: 'setting.env' }, ['--env-file=flag.env'], dir), join(dir, 'flag.env'));
    assert.equal(process.env.ENV_FILE_TEST_OTHER, 'flag');
    assert.equal(process.env.ENV_FILE_TEST_FROM_FILE, undefined);
    delete process.env.ENV_FILE_TEST_OTHER;
    assert.equal(loadEnvFile({ ENV_FILE: 'setting.env' }, [], dir), join(dir, 'setting.env'));
    assert.equal(process.env.ENV_FILE_TEST_OTHER, 'setting');
    assert.equal(loadEnvFile({}, ['--env-file', 'flag.env'], dir), join(dir, 'flag.env'));
  });

  it('loads nothing without .env, and refuses a named file it cannot read', () => {
    assert.equal(loadEnvFile({}, [], dir), null);
    assert.throws(() => loadEnvFile({}, ['--env-file=missing.env'], dir), (error: unknown) => error instanceof ConfigError && /--env-file: cannot read .*missing\.env \(ENOENT\)/.test(error.message));
    assert.throws(() => loadEnvFile({ ENV_FILE: 'missing.env' }, [], dir), /ENV_FILE: cannot read/);
    assert.throws(() => loadEnvFile({}, ['--env-file'], dir), /--env-file: expected a path/);
  });

  // Each entry point loads the file before it reads its settings: a bad value from .env is
  // named at start, and the same setting's bad value in .env is overridden by a good one
  // from the environment, so it is not.
  for (const [program, entry, fromFile, overridden] of [
    ['control', 'control/main.ts', 'CONTROL_PORT', 'SESSION_TTL_MINUTES'],
    ['authz', 'authz/main.ts', 'AUTHZ_METRICS_PORT', 'AUTHZ_MAX_QUEUED'],
    ['the local edge', 'envoy/local-edge/main.ts', 'EDGE_PORT', 'EDGE_HTTPS_PORT'],
    ['npm run up', 'scripts/up.ts', 'UP_POSTGRES_PORT', 'UP_REDIS_PORT'],
  ] as const) {
    it(`${program} reads .env from its working directory, the environment winning`, async () => {
      writeFileSync(join(dir, '.env'), `${fromFile}=99999\n${overridden}=-1\n`);
      const { code, stderr } = await run(entry, dir, { [overridden]: '5' });
      // The platform's processes stop with EX_CONFIG and the message alone, no stack.
      if (entry === 'scripts/up.ts') assert.notEqual(code, 0, stderr);
      else {
        assert.equal(code, 78, stderr);
        assert.doesNotMatch(stderr, /\n\s+at /, 'no stack trace');
      }
      assert.match(stderr, new RegExp(`${fromFile}: expected an integer from 0 to 65535, got "99999"`));
      assert.doesNotMatch(stderr, new RegExp(overridden));
    });
  }

  it('control reads the file --env-file names', async () => {
    writeFileSync(join(dir, 'platform.env'), 'CONTROL_PORT=99999\n');
    const { code, stderr } = await run('control/main.ts', dir, {}, ['--env-file=platform.env']);
    assert.equal(code, 78, stderr);
    assert.match(stderr, /CONTROL_PORT: expected an integer from 0 to 65535, got "99999"/);
  });
});

/** Runs an entry point in `cwd` with only PATH and `env` set, as a fresh shell would. */
function run(entry: string, cwd: string, env: Record<string, string>, args: string[] = []): Promise<{ code: number | null; stderr: string }> {
  return new Promise((done) => {
    const child = execFile(process.execPath, ['--import', TSX, join(ROOT, entry), ...args], { cwd, env: { PATH: process.env.PATH ?? '', ...env }, timeout: 20_000 }, (_error, _stdout, stderr) =>
      done({ code: child.exitCode, stderr }),
    );
  });
}
