import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import { pino } from 'pino';
import { connectDatabase } from '../control/db/database.js';
import { exclusivePass } from '../control/services/exclusive-pass.js';
import { PeriodicPass, type PassRecord, type PeriodicPassOptions } from '../control/services/periodic-pass.js';
import { waitFor } from './support/wait.js';

/** A pass that blocks until released, counting how often it was entered. */
function heldPass() {
  let release!: () => void;
  let entered!: () => void;
  const state = { calls: 0, finished: 0 };
  const enteredOnce = new Promise<void>((resolve) => (entered = resolve));
  const released = new Promise<void>((resolve) => (release = resolve));
  const pass = async () => {
    state.calls += 1;
    entered();
    await released;
    state.finished += 1;
  };
  return { pass, state, entered: enteredOnce, release };
}

/** Picks a lock number of its own per test, so tests cannot see each other's locks. */
let nextLock = 1_000;

/**
 * The helper behind the reconciler, autoscaler, meter and flusher: one pass at a time, in
 * one copy of the control API at a time, stopped cleanly, and never silenced by a failure.
 * The lock is taken on real Postgres: two connection pools stand for two copies.
 */
describe('PeriodicPass', () => {
  const logs: Record<string, any>[] = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => void logs.push(JSON.parse(line)) });
  const loops: PeriodicPass[] = [];
  let admin: Knex;
  let database: string;
  let copyA: Knex;
  let copyB: Knex;

  before(async () => {
    const templateUrl = process.env.TEST_TEMPLATE_DATABASE_URL;
    if (!templateUrl) throw new Error('Run tests with `npm test`: the global setup starts Postgres');
    admin = connectDatabase(templateUrl.replace(/\/[^/]+$/, '/postgres'), { min: 0, max: 1 });
    database = `p_${randomBytes(6).toString('hex')}`;
    await admin.raw(`CREATE DATABASE ${database}`);
    const url = templateUrl.replace(/\/[^/]+$/, `/${database}`);
    copyA = connectDatabase(url, { min: 0, max: 2 });
    copyB = connectDatabase(url, { min: 0, max: 2 });
  });
  after(async () => {
    await Promise.all(loops.map((loop) => loop.stop()));
    await copyA?.destroy();
    await copyB?.destroy();
    if (database) await admin.raw(`DROP DATABASE IF EXISTS ${database}`);
    await admin?.destroy();
  });
  beforeEach(() => {
    logs.length = 0;
  });

  /** A loop whose passes are recorded in `records`; stopped after the suite in any case. */
  function loopOf(options: Partial<PeriodicPassOptions> & Pick<PeriodicPassOptions, 'pass'>) {
    const records: PassRecord[] = [];
    const loop = new PeriodicPass({ loop: 'test-loop', intervalMs: 60_000, logger, failureMessage: 'test pass failed', onPass: (pass) => records.push(pass), ...options });
    loops.push(loop);
    return { loop, records };
  }

  /** Counts the calls the timer makes into `runOnce` (the timer calls it as a method). */
  function countTicks(loop: PeriodicPass) {
    const ticks = { count: 0 };
    const runOnce = loop.runOnce.bind(loop);
    loop.runOnce = () => {
      ticks.count += 1;
      return runOnce();
    };
    return ticks;
  }

  it('runs one pass at a time: ticks during a slow pass join it instead of stacking', async () => {
    const held = heldPass();
    const { loop, records } = loopOf({ pass: held.pass, intervalMs: 5 });
    const ticks = countTicks(loop);
    loop.start();
    await held.entered;
    const joined = loop.runOnce();
    await waitFor('three more ticks during the pass', async () => (ticks.count >= 4 ? true : undefined), 10_000, 5);
    assert.equal(held.state.calls, 1, 'one pass entered, however many ticks came');
    held.release();
    await joined;
    assert.equal(held.state.finished, 1);
    assert.equal(records[0]?.outcome, 'ran');
    await waitFor('the next tick to run a new pass', async () => (held.state.calls >= 2 ? true : undefined), 10_000, 5);
    await loop.stop();
  });

  it('skips the pass while another copy holds the loop\'s lock, and runs it once the lock is free', async () => {
    const lock = (nextLock += 1);
    const otherCopy = heldPass();
    const otherDone = exclusivePass(copyA, lock)(otherCopy.pass);
    await otherCopy.entered;

    let ran = 0;
    const { loop, records } = loopOf({ pass: async () => void (ran += 1), exclusive: exclusivePass(copyB, lock) });
    await loop.runOnce();
    assert.equal(ran, 0, 'the pass did not run beside the other copy\'s');
    assert.equal(records.at(-1)?.outcome, 'skipped');

    otherCopy.release();
    assert.equal(await otherDone, true);
    await loop.runOnce();
    assert.equal(ran, 1);
    assert.deepEqual(records.map((record) => record.outcome), ['skipped', 'ran']);
    assert.ok(records.every((record) => record.loop === 'test-loop' && record.durationMs >= 0));
  });

  it('stop waits for the running pass to finish', async () => {
    const held = heldPass();
    const { loop } = loopOf({ pass: held.pass });
    loop.start();
    const running = loop.runOnce();
    await held.entered;
    let finishedWhenStopped: number | undefined;
    const stopped = loop.stop().then(() => (finishedWhenStopped = held.state.finished));
    held.release();
    await Promise.all([stopped, running]);
    assert.equal(finishedWhenStopped, 1, 'stop resolved only after the pass had finished');
  });

  it('logs a failed pass, records it, and runs the next pass on the next tick', async () => {
    let calls = 0;
    const { loop, records } = loopOf({
      intervalMs: 5,
      pass: async () => {
        calls += 1;
        if (calls === 1) throw new Error('Postgres went away');
      },
    });
    loop.start();
    await waitFor('a failed pass and then one that ran', async () => (records.length >= 2 ? true : undefined), 10_000, 5);
    await loop.stop();
    assert.deepEqual(records.slice(0, 2).map((record) => record.outcome), ['failed', 'ran']);
    const failure = logs.find((line) => line.msg === 'test pass failed');
    assert.ok(failure, JSON.stringify(logs));
    assert.equal(failure.level, 50, 'logged as an error');
    assert.equal(failure.loop, 'test-loop');
    assert.equal(failure.err.message, 'Postgres went away');
  });

  it('keeps running when its observer throws, and logs the observer\'s fault', async () => {
    let ran = 0;
    const loop = new PeriodicPass({
      loop: 'observed', intervalMs: 60_000, logger, failureMessage: 'observed pass failed',
      pass: async () => void (ran += 1),
      onPass: () => {
        throw new Error('metrics broke');
      },
    });
    await loop.runOnce();
    await loop.runOnce();
    assert.equal(ran, 2);
    assert.equal(logs.filter((line) => line.msg === 'pass observer failed' && line.err.message === 'metrics broke').length, 2);
  });
});
