import assert from 'node:assert/strict';
import { Supervisor, type Component, type SupervisorOptions } from '../scripts/lib/supervisor.js';
import { waitFor } from './support/wait.js';

/**
 * `npm run up`'s supervisor with real child processes: a Node script that stays up, one
 * that exits at once, one that ignores SIGTERM. Each is killed or left to die as a crash
 * would, and the test checks with the kernel (signal 0) which processes still exist.
 */
const script = (name: string, code: string): Component => ({
  name,
  command: process.execPath,
  args: ['-e', code],
  env: { PATH: process.env.PATH ?? '' },
  cwd: process.cwd(),
});
const staysUp = (name: string) => script(name, 'setInterval(() => {}, 1000)');
const ignoresSigterm = (name: string) => script(name, "process.on('SIGTERM', () => {}); setInterval(() => {}, 1000)");
const exitsAtOnce = (name: string, code: number) => script(name, `process.exit(${code})`);

const isAlive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ESRCH') return false;
    throw error;
  }
};

describe('npm run up: the supervisor', () => {
  let supervisor: Supervisor | undefined;
  let lines: string[];
  let gaveUp: string[];

  const supervise = (options: Partial<SupervisorOptions> = {}) => {
    lines = [];
    gaveUp = [];
    supervisor = new Supervisor({
      backoffInitialMs: 20,
      backoffMaxMs: 100,
      maxCrashes: 5,
      crashWindowMs: 60_000,
      stopTimeoutMs: 5_000,
      log: (line) => lines.push(line),
      onGiveUp: (reason) => gaveUp.push(reason),
      ...options,
    });
    return supervisor;
  };
  const pidOf = (name: string) => supervisor!.processOf(name)!.pid!;

  afterEach(async () => supervisor?.stop());

  it('restarts a component killed by SIGKILL, after a backoff, and logs it', async () => {
    supervise().start(staysUp('control'));
    const first = pidOf('control');
    process.kill(first, 'SIGKILL');
    const second = await waitFor('a new control process', async () => (pidOf('control') !== first ? pidOf('control') : undefined), 10_000);
    assert.ok(isAlive(second));
    assert.ok(!isAlive(first));
    assert.ok(lines.some((line) => /^control exited \(signal SIGKILL\); restarting in \d+ ms/.test(line)), lines.join('\n'));
    assert.deepEqual(gaveUp, []);
  });

  it('restarts a component again after each further crash, counting them', async () => {
    supervise().start(staysUp('authz'));
    const pids = [pidOf('authz')];
    for (let crash = 1; crash <= 3; crash += 1) {
      process.kill(pids.at(-1)!, 'SIGTERM'); // exits on its own, as far as the supervisor knows
      pids.push(await waitFor('a restart', async () => (pidOf('authz') !== pids.at(-1) ? pidOf('authz') : undefined), 10_000));
    }
    assert.equal(new Set(pids).size, 4);
    assert.ok(isAlive(pids.at(-1)!));
    assert.match(lines.join('\n'), /crash 3 of 5/);
  });

  it('gives up the platform after the allowed crashes within the window, and restarts no more', async () => {
    supervise({ maxCrashes: 3 }).start(exitsAtOnce('edge', 1));
    await waitFor('the supervisor to give up', async () => (gaveUp.length > 0 ? true : undefined), 10_000);
    assert.equal(gaveUp.length, 1);
    assert.match(gaveUp[0]!, /edge exited 3 times within 60 s \(last: code 1\)/);
    assert.equal(lines.filter((line) => line.startsWith('started edge')).length, 3, lines.join('\n'));
  });

  it('does not restart a component that exits with a configuration error (78)', async () => {
    supervise().start(exitsAtOnce('control', 78));
    await waitFor('the supervisor to give up', async () => (gaveUp.length > 0 ? true : undefined), 10_000);
    assert.match(gaveUp[0]!, /configuration is wrong/);
    assert.equal(lines.filter((line) => line.startsWith('started control')).length, 1);
  });

  it('stops every child: a running one, one that ignores SIGTERM, and one already dead by a signal', async () => {
    // A long backoff: the dead one is still waiting for its restart when stop() comes.
    const running = supervise({ backoffInitialMs: 60_000, backoffMaxMs: 60_000, stopTimeoutMs: 500 });
    running.start(staysUp('redis'));
    running.start(ignoresSigterm('stubborn'));
    running.start(staysUp('control'));
    const pids = ['redis', 'stubborn', 'control'].map(pidOf);
    process.kill(pidOf('control'), 'SIGKILL');
    await waitFor('the supervisor to see control die', async () => (lines.some((l) => l.startsWith('control exited')) ? true : undefined), 10_000);

    await running.stop();
    assert.deepEqual(pids.map(isAlive), [false, false, false]);
    assert.ok(lines.some((line) => line.startsWith('stubborn did not stop within 0.5 s of SIGTERM; sending SIGKILL')), lines.join('\n'));
    // Stopped means stopped: the pending restart of control never happens.
    assert.equal(lines.filter((line) => line.startsWith('started control')).length, 1);
  });
});
