import type { Knex } from 'knex';

/** First key of every platform loop lock, so they cannot collide with locks taken by other code on the same database. */
const LOOP_LOCK_NAMESPACE = 0x61_67_6e; // "agn"

/**
 * Postgres advisory locks that keep a platform loop's pass to one copy of the control API
 * at a time. Bound to a transaction: the lock is transaction-level, so it ends with the
 * transaction (the pass) or with a copy that dies mid-pass, and no lock outlives its holder.
 */
export class LoopLockRepository {
  constructor(private readonly db: Knex) {}

  /** Takes the loop's lock for the rest of this transaction; false at once while another holds it. */
  async tryTake(loop: number): Promise<boolean> {
    const { rows } = await this.db.raw('SELECT pg_try_advisory_xact_lock(?, ?) AS acquired', [LOOP_LOCK_NAMESPACE, loop]);
    return rows[0].acquired === true;
  }
}
