import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { pino } from 'pino';
import { systemClock } from '../contract/clock.js';
import { ConfigError } from '../contract/settings-reader.js';
import { loadConfig } from '../control/config/config.js';
import { createOrchestrator } from '../control/orchestrator/create.js';
import { holdInstance } from '../control/orchestrator/podman/instance-hold.js';

const BASE = { DATABASE_URL: 'postgres://u:p@127.0.0.1/db', REDIS_URL: 'redis://127.0.0.1:6379', MASTER_KEY: Buffer.alloc(32, 7).toString('base64') };

const isInstanceTaken = (error: unknown) => {
  assert.ok(error instanceof ConfigError, String(error));
  assert.deepEqual(error.problems.map((problem) => problem.split(':')[0]), ['PODMAN_INSTANCE']);
  assert.match(error.problems[0]!, /another control API on this host runs the podman instance/);
  return true;
};

/** Another process holding `instance`, as a second control API would; resolves once it holds it. */
async function holderProcess(instance: string) {
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', `
    const { holdInstance } = await import(${JSON.stringify(new URL('../control/orchestrator/podman/instance-hold.ts', import.meta.url).href)});
    await holdInstance(${JSON.stringify(instance)});
    console.log('held');
    setInterval(() => undefined, 60_000);
  `], { stdio: ['ignore', 'pipe', 'inherit'] });
  const [line] = await once(createInterface({ input: child.stdout! }), 'line');
  assert.equal(line, 'held');
  return child;
}

/**
 * One control API per podman instance on a host (control/orchestrator/podman/instance-hold.ts):
 * a second one would converge the same containers from a view of its own.
 */
describe('podman driver: one control API per instance on a host', function () {
  this.timeout(30_000);
  const instance = `test-hold-${process.pid}`;

  it('refuses a second hold of an instance, naming PODMAN_INSTANCE, and gives it again once released', async () => {
    const first = await holdInstance(instance);
    await assert.rejects(holdInstance(instance), isInstanceTaken);
    const other = await holdInstance(`${instance}-other`);
    await other.release();
    await first.release();
    const again = await holdInstance(instance);
    await again.release();
  });

  it('is refused while another process holds the instance, and free as soon as that process is killed', async () => {
    const holder = await holderProcess(instance);
    try {
      await assert.rejects(holdInstance(instance), isInstanceTaken);
    } finally {
      holder.kill('SIGKILL');
      await once(holder, 'exit');
    }
    // No lock file to clean up after a kill: the kernel freed the name with the process.
    const hold = await holdInstance(instance);
    await hold.release();
  });

  it('stops the control API at start before it touches the instance, where another one runs it', async () => {
    const stateDirectory = join(tmpdir(), `hold-state-${process.pid}`);
    const config = loadConfig({ ...BASE, PODMAN_INSTANCE: instance, PODMAN_STATE_DIR: stateDirectory });
    const holder = await holderProcess(instance);
    try {
      await assert.rejects(createOrchestrator(config, systemClock, pino({ level: 'silent' })), isInstanceTaken);
      assert.equal(existsSync(stateDirectory), false, 'the running one’s directory is left alone');
    } finally {
      holder.kill('SIGKILL');
      await once(holder, 'exit');
    }
  });
});
