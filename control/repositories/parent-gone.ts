import type { Knex } from 'knex';

/** Postgres's foreign_key_violation (Appendix A, Error Codes). */
const FOREIGN_KEY_VIOLATION = '23503';

/**
 * Inserts a row whose parent (a user) may have been deleted by another request since it
 * was read: the foreign key, not a read before the insert, is what sees that race, and it
 * is answered as "gone" rather than as a server error.
 */
export async function insertUnlessParentGone(table: Knex.QueryBuilder, row: object): Promise<boolean> {
  try {
    await table.insert(row);
    return true;
  } catch (error) {
    if ((error as { code?: string }).code === FOREIGN_KEY_VIOLATION) return false;
    throw error;
  }
}
