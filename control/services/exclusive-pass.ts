import type { Knex } from 'knex';

/**
 * The loops that act for the whole platform (reconciler, autoscaler) run in one copy of
 * the control API at a time, whichever takes the loop's Postgres advisory lock for a pass
 * (DESIGN.md §9). A transaction-level lock ends with the pass or with a copy that dies
 * mid-pass, so no lock outlives its holder; the copy that skips tries again next tick.
 */
export type ExclusivePass = (pass: () => Promise<void>) => Promise<boolean>;

/** First key of every platform loop lock, so they cannot collide with locks taken by other code on the same database. */
const LOOP_LOCK_NAMESPACE = 0x61_67_6e; // "agn"

/** Second key per loop; a new loop takes the next number. */
export const LOOP_LOCKS = {
  reconciler: 1,
  autoscaler: 2,
} as const;

/** Runs `pass` holding the loop's lock, or skips it (false) while another copy holds it. */
export function exclusivePass(db: Knex, loop: number): ExclusivePass {
  return (pass) =>
    db.transaction(async (trx) => {
      const { rows } = await trx.raw('SELECT pg_try_advisory_xact_lock(?, ?) AS acquired', [LOOP_LOCK_NAMESPACE, loop]);
      if (!rows[0].acquired) return false;
      await pass();
      return true;
    });
}
