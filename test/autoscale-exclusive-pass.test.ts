import assert from 'node:assert/strict';
import { connectDatabase } from '../control/db/database.js';
import { createLogger } from '../control/config/logger.js';
import { Autoscaler } from '../control/services/autoscaler.js';
import { exclusivePass, LOOP_LOCKS } from '../control/services/exclusive-pass.js';
import { Reconciler } from '../control/services/reconciler.js';
import { startControl, type TestControl } from './support/control-harness.js';

/**
 * Two copies of the control API share one Postgres: each loop's pass runs in one copy at
 * a time. A second connection pool stands for the second copy.
 */
describe('loop passes in one copy of the control API at a time (Postgres advisory lock)', () => {
  let control: TestControl;
  let otherCopy: ReturnType<typeof connectDatabase>;

  before(async () => {
    control = await startControl();
    otherCopy = connectDatabase(control.config.databaseUrl, { min: 0, max: 2 });
  });
  after(async () => {
    await otherCopy?.destroy();
    await control?.close();
  });

  /** Runs a pass in the first copy that holds its lock until `release` is called. */
  function holdPass(loop: number) {
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let started!: () => void;
    const running = new Promise<void>((resolve) => (started = resolve));
    const done = exclusivePass(control.db, loop)(async () => {
      started();
      await released;
    });
    return { running, release, done };
  }

  it('skips a pass while another copy runs one, and runs it once that copy is done', async () => {
    const first = holdPass(LOOP_LOCKS.autoscaler);
    await first.running;
    let ran = false;
    assert.equal(await exclusivePass(otherCopy, LOOP_LOCKS.autoscaler)(async () => void (ran = true)), false);
    assert.equal(ran, false);
    first.release();
    assert.equal(await first.done, true);
    assert.equal(await exclusivePass(otherCopy, LOOP_LOCKS.autoscaler)(async () => void (ran = true)), true);
    assert.equal(ran, true);
  });

  it('gives each loop its own lock: the reconciler runs while the autoscaler is held', async () => {
    const autoscaling = holdPass(LOOP_LOCKS.autoscaler);
    await autoscaling.running;
    try {
      assert.equal(await exclusivePass(otherCopy, LOOP_LOCKS.reconciler)(async () => undefined), true);
    } finally {
      autoscaling.release();
      await autoscaling.done;
    }
  });

  it('releases the lock when a pass fails', async () => {
    await assert.rejects(exclusivePass(control.db, LOOP_LOCKS.reconciler)(async () => { throw new Error('pass failed'); }), /pass failed/);
    assert.equal(await exclusivePass(otherCopy, LOOP_LOCKS.reconciler)(async () => undefined), true);
  });

  it('wires the lock into the reconciler and the autoscaler: a held lock means no pass', async () => {
    const logger = createLogger('silent');
    const services = control.control.services;
    let rebuilt = 0;
    const edge = { rebuild: async () => void (rebuilt += 1) } as unknown as typeof services.edge;
    const runner = { reconcileAll: async () => undefined } as unknown as NonNullable<typeof services.runner>;
    const reconciler = new Reconciler(runner, edge, 60_000, logger, { exclusive: exclusivePass(otherCopy, LOOP_LOCKS.reconciler) });
    const held = holdPass(LOOP_LOCKS.reconciler);
    await held.running;
    await reconciler.runOnce();
    assert.equal(rebuilt, 0, 'the other copy holds the lock');
    held.release();
    await held.done;
    await reconciler.runOnce();
    assert.equal(rebuilt, 1);

    let listed = 0;
    const countingDb = new Proxy(otherCopy, {
      apply: (target, self, args: [string]) => {
        if (args[0] === 'agents') listed += 1;
        return Reflect.apply(target, self, args);
      },
    });
    const outcomes: string[] = [];
    const autoscaler = new Autoscaler(
      { db: countingDb, redis: control.redis, driver: { orchestrator: {} as never, clock: control.clock }, scaling: services.platformScaling, clock: control.clock, settings: control.config.autoscale, logger },
      { exclusive: exclusivePass(otherCopy, LOOP_LOCKS.autoscaler), onPass: (pass) => outcomes.push(pass.outcome) },
    );
    const heldScaler = holdPass(LOOP_LOCKS.autoscaler);
    await heldScaler.running;
    await autoscaler.runOnce();
    assert.equal(listed, 0, 'no agent was even looked at');
    heldScaler.release();
    await heldScaler.done;
    await autoscaler.runOnce();
    assert.equal(listed, 1);
    assert.deepEqual(outcomes, ['skipped', 'ran']);
  });
});
