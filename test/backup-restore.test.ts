import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connectDatabase } from '../control/db/database.js';
import { scanKeys } from '../control/db/redis.js';
import { pgProgram } from '../scripts/lib/platform-state.js';
import { startControl, type TestControl } from './support/control-harness.js';
import { expectStatus } from './support/control-api.js';
import { connectTestRedis, startTestAuthz } from './support/edge-authz.js';
import { createRunningAgent, execIn, waitFor } from './support/orch-helpers.js';
import { containersOf } from './support/podman.js';

/**
 * The runbook's backup and restore (docs/operations.md), run as an operator runs them:
 * `npm run backup` against a platform whose agents run with secrets and access keys, then
 * the platform is stopped and wiped (database dropped, key file deleted, its Redis keys
 * gone, containers removed), `npm run restore` puts it back, and a control API started on
 * the restored database and keys runs the agent again with its secret and lets its key in.
 */
describe('backup and restore (npm run backup / restore, real Postgres and podman)', function () {
  this.timeout(300_000);
  const work = mkdtempSync(join(tmpdir(), 'backup-restore-'));
  const backup = join(work, 'backup');
  const liveKeyFile = join(work, 'live', 'master.key');
  const restoredKeyFile = join(work, 'restored', 'master.key');
  const secret = `secret-${randomBytes(8).toString('hex')}`;
  const masterKey = randomBytes(32).toString('base64');
  let control: TestControl | undefined;

  after(async () => {
    await control?.close();
    rmSync(work, { recursive: true, force: true });
  });

  /** `npm run <script> -- args` as a child process, with the platform's settings in its environment. */
  const run = (script: 'backup' | 'restore', args: string[], env: Record<string, string>) =>
    new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
      execFile(process.execPath, ['--import', 'tsx', `scripts/${script}.ts`, ...args], { env: { ...process.env, ...env }, timeout: 120_000 }, (error, stdout, stderr) =>
        resolve({ code: error ? (typeof error.code === 'number' ? error.code : -1) : 0, stdout, stderr }));
    });

  it('brings back the agents, their secrets and access keys, and the users', async () => {
    mkdirSync(join(work, 'live'));
    writeFileSync(liveKeyFile, `${masterKey}\n`, { mode: 0o600 });
    const first = await startControl({ MASTER_KEY: masterKey }, { orchestrate: true });
    control = first;
    const { database } = first;
    const databaseUrl = first.config.databaseUrl;
    const owner = await first.signUp();
    const agent = await createRunningAgent(first, owner.token, {
      deploy: { replicas: 1, env: [{ key: 'MODE', value: 'serve' }, { key: 'TOKEN', value: secret, secret: true }] },
    });
    const key = await first.request('POST', `/agents/${agent.id}/access-keys`, { token: owner.token, body: { label: 'caller' } });
    expectStatus(key, 201);
    assert.equal((await execIn(first, agent.replica.id, 'printf %s "$TOKEN"')).stdout, secret);

    const backedUp = await run('backup', [backup], { DATABASE_URL: databaseUrl, MASTER_KEY_FILE: liveKeyFile });
    assert.equal(backedUp.code, 0, backedUp.stderr);
    assert.equal(statSync(backup).mode & 0o777, 0o700);
    assert.equal(statSync(join(backup, 'master-keys')).mode & 0o777, 0o600);
    assert.equal(readFileSync(join(backup, 'master-keys'), 'utf8').trim(), masterKey);
    const dumpText = execFileSync(pgProgram('pg_restore'), ['--file=-', join(backup, 'postgres.dump')], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
    assert.ok(dumpText.includes(agent.id), 'the dump holds the agent');
    assert.ok(!dumpText.includes(secret), 'the dump holds the secret only sealed');

    // The platform is lost: containers, database, key file and its Redis keys.
    const redisPrefix = first.config.redisKeyPrefix;
    await first.close();
    control = undefined;
    assert.deepEqual(containersOf(agent.id), []);
    await dropDatabase(database);
    rmSync(liveKeyFile);
    const redis = connectTestRedis(redisPrefix);
    const leftover = await scanKeys(redis, '*');
    if (leftover.length > 0) await redis.del(...leftover);
    redis.disconnect();

    const restored = await run('restore', [backup], { DATABASE_URL: databaseUrl, MASTER_KEY_FILE: restoredKeyFile });
    assert.equal(restored.code, 0, restored.stderr);
    assert.equal(readFileSync(restoredKeyFile, 'utf8').trim(), masterKey);
    assert.equal(statSync(restoredKeyFile).mode & 0o777, 0o600);
    // A second restore would throw away what is there now: refused without --replace, nothing touched.
    const again = await run('restore', [backup], { DATABASE_URL: databaseUrl, MASTER_KEY_FILE: restoredKeyFile });
    assert.equal(again.code, 2, again.stdout);
    assert.match(again.stderr, /holds tables.*--replace/);

    const second = await startControl({ MASTER_KEY: readFileSync(restoredKeyFile, 'utf8').trim() }, { orchestrate: true, resume: { database } });
    control = second;
    const token = await signIn(second, owner.user.email, owner.password); // the users are back
    const running = await waitFor(`agent ${agent.id} running again`, async () => {
      const response = await second.request('GET', `/agents/${agent.id}`, { token });
      return response.body?.status === 'running' ? response.body : undefined;
    }, 120_000, 500);
    assert.equal(running.name, agent.agent.name);
    const replica = await waitFor('a running replica', async () => (await second.driver!.status(agent.id))?.replicas.find((r) => r.state === 'running'));
    assert.equal((await execIn(second, replica.id, 'printf %s "$TOKEN"')).stdout, secret, 'the restored replica gets the secret value');

    const edge = await startTestAuthz({ redis: second.redis, clock: second.clock, agentDomain: second.config.agentUrl.domain });
    try {
      const check = await edge.client.check({ host: new URL(agent.agent.url).hostname, headers: { authorization: `Bearer ${key.body.key}` } });
      assert.equal(check.http_response, 'ok_response', 'the access key made before the backup is let in');
    } finally {
      await edge.close();
    }
  });
});

async function signIn(control: TestControl, email: string, password: string): Promise<string> {
  const response = await control.request('POST', '/auth/login', { body: { email, password } });
  expectStatus(response, 200);
  return response.body.token;
}

async function dropDatabase(name: string): Promise<void> {
  const admin = connectDatabase(process.env.TEST_TEMPLATE_DATABASE_URL!.replace(/\/[^/]+$/, '/postgres'), { min: 0, max: 1 });
  try {
    await admin.raw(`DROP DATABASE ${name} WITH (FORCE)`);
  } finally {
    await admin.destroy();
  }
}
