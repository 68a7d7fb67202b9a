import assert from 'node:assert/strict';
import type { Knex } from 'knex';
import { connectDatabase } from '../control/db/database.js';
import { PreparedStatement } from '../control/db/prepared-statement.js';

/**
 * The session hot path's statements (control/db/prepared-statement.ts) on a real Postgres,
 * through a pool of one connection so that every call meets the same server session.
 */
describe('PreparedStatement', () => {
  const pools: Knex[] = [];
  const onePool = () => {
    const url = new URL(process.env.TEST_TEMPLATE_DATABASE_URL!);
    url.pathname = '/postgres';
    const db = connectDatabase(url.toString(), { min: 0, max: 1 });
    pools.push(db);
    return db;
  };
  const preparedNames = async (db: Knex) => (await db.raw<{ rows: { name: string }[] }>('SELECT name FROM pg_prepared_statements')).rows.map((row) => row.name);

  after(async () => {
    for (const db of pools.splice(0)) await db.destroy();
  });

  it('binds named values, one name used twice being one parameter, and is parsed once per connection under its name', async () => {
    const db = onePool();
    const sum = new PreparedStatement<{ n: number; same: boolean }>('test_sum', 'SELECT CAST(:a AS integer) + CAST(:b AS integer) AS n, CAST(:a AS integer) = CAST(:a AS integer) AS same');
    assert.deepEqual(await sum.run(db, { a: 2, b: 3 }), [{ n: 5, same: true }]);
    assert.deepEqual(await sum.run(db, { a: 10, b: -1 }), [{ n: 9, same: true }]);
    assert.deepEqual(await preparedNames(db), ['test_sum']);
  });

  it('sends itself unnamed, on that pool from then on, once the server has lost its name (26000), as behind a pooler in transaction mode', async () => {
    const db = onePool();
    const echo = new PreparedStatement<{ v: string }>('test_echo_lost', 'SELECT CAST(:v AS text) AS v');
    assert.deepEqual(await echo.run(db, { v: 'first' }), [{ v: 'first' }]);
    // What a pooler does by handing the next transaction another server connection: the name is not there.
    await db.raw('DEALLOCATE ALL');
    assert.deepEqual(await echo.run(db, { v: 'second' }), [{ v: 'second' }]);
    assert.deepEqual(await echo.run(db, { v: 'third' }), [{ v: 'third' }]);
    assert.deepEqual(await preparedNames(db), [], 'no name is parsed on that pool any more');
  });

  it('sends itself unnamed when its name is taken on the server already (42P05)', async () => {
    const db = onePool();
    await db.raw('PREPARE test_echo_taken AS SELECT 1');
    const echo = new PreparedStatement<{ v: string }>('test_echo_taken', 'SELECT CAST(:v AS text) AS v');
    assert.deepEqual(await echo.run(db, { v: 'mine' }), [{ v: 'mine' }]);
  });

  it('reports any other failure as it is, and refuses to run in a transaction, whose connection it would not be on', async () => {
    const db = onePool();
    const broken = new PreparedStatement('test_broken', 'SELECT CAST(:v AS integer)');
    await assert.rejects(broken.run(db, { v: 'not a number' }), (error: { code?: string }) => error.code === '22P02');
    await assert.rejects(broken.run(db, {}), /no value for :v/);
    await db.transaction(async (trx) => {
      await assert.rejects(broken.run(trx, { v: 1 }), /outside any transaction/);
    });
  });
});
