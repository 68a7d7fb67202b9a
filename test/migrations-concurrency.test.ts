import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { connectDatabase, migrate, MIGRATION_LOCK, type Database } from '../control/db/database.js';
import { waitFor } from './support/wait.js';

/**
 * Several copies of the control API start at once on one database (docs/operations.md,
 * "Upgrades"): each runs migrate() at start; they must take turns, whatever the database's
 * state and however long a migration runs.
 */
describe('migrations: several copies starting at once', function () {
  this.timeout(120_000);
  const serverUrl = () => process.env.TEST_TEMPLATE_DATABASE_URL!.replace(/\/[^/]+$/, '');
  let admin: Database;
  const opened: Database[] = [];
  let name: string;

  beforeEach(async () => {
    admin = connectDatabase(`${serverUrl()}/postgres`, { min: 0, max: 1 });
    name = `m_${randomBytes(5).toString('hex')}`;
    await admin.raw(`CREATE DATABASE ${name}`);
  });
  afterEach(async () => {
    for (const db of opened.splice(0)) await db.destroy();
    await admin.raw(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.destroy();
  });

  /** A copy of the control API's pool on the new database, with the control API's 30 s statement timeout unless told. */
  const copy = (statementTimeoutMs = 30_000, max = 10) => {
    const db = connectDatabase(`${serverUrl()}/${name}`, { min: 0, max }, statementTimeoutMs);
    opened.push(db);
    return db;
  };
  const applied = async (db: Database) => (await db('knex_migrations').select('name')).map((row) => row.name as string);

  it('three copies on a new, empty database all start, and each migration runs once', async () => {
    const copies = [copy(), copy(), copy(30_000, 1)];
    const results = await Promise.allSettled(copies.map((db) => migrate(db)));
    assert.deepEqual(results.map((r) => (r.status === 'rejected' ? String(r.reason) : 'ok')), ['ok', 'ok', 'ok']);
    const names = await applied(copies[0]!);
    assert.ok(names.length > 0);
    assert.equal(new Set(names).size, names.length, `a migration ran twice: ${names.join(', ')}`);
  });

  it('a copy waits for the one migrating for longer than its statement timeout, then finds nothing left to run', async () => {
    const first = copy();
    await migrate(first);
    const before = await applied(first);
    // Another copy migrating holds the lock (a test connection takes it in its place).
    const holder = await first.client.acquireConnection();
    try {
      await holder.query('SELECT pg_advisory_lock($1, $2)', [...MIGRATION_LOCK]);
      const waiting = migrate(copy(100));
      const outcome = waiting.then(() => 'migrated', (error: Error) => error.message);
      // Its wait for the lock has lasted past its 100 ms statement timeout and it is still waiting, not cancelled.
      await waitFor('the copy waiting past its statement timeout', async () => {
        const { rows } = await admin.raw(
          `SELECT 1 FROM pg_stat_activity WHERE datname = ? AND wait_event_type = 'Lock' AND query LIKE '%pg_advisory_lock%'
             AND clock_timestamp() - query_start > interval '500 milliseconds'`,
          [name],
        );
        return rows.length > 0 ? true : undefined;
      });
      await holder.query('SELECT pg_advisory_unlock($1, $2)', [...MIGRATION_LOCK]);
      assert.equal(await outcome, 'migrated');
    } finally {
      await first.client.releaseConnection(holder);
    }
    assert.deepEqual(await applied(first), before);
  });
});
