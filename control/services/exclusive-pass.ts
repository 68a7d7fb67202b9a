import type { Knex } from 'knex';
import { inTransaction } from '../repositories/index.js';

/**
 * The loops that act for the whole platform (reconciler, autoscaler) run in one copy of
 * the control API at a time, whichever takes the loop's Postgres advisory lock for a pass
 * (docs/decisions.md, "Loops in several copies of the control API"). The lock lasts as long as the pass's transaction (see
 * repositories/loop-locks.ts); the copy that skips tries again next tick.
 */
export type ExclusivePass = (pass: () => Promise<void>) => Promise<boolean>;

/** Second key per loop; a new loop takes the next number. */
export const LOOP_LOCKS = {
  reconciler: 1,
  autoscaler: 2,
  idleParker: 3,
  domains: 4,
  canaryJudge: 5,
  sessionSweeper: 6,
} as const;

/** Runs `pass` holding the loop's lock, or skips it (false) while another copy holds it. */
export function exclusivePass(db: Knex, loop: number): ExclusivePass {
  return (pass) =>
    inTransaction(db, async (repos) => {
      if (!(await repos.loopLocks.tryTake(loop))) return false;
      await pass();
      return true;
    });
}
