import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import { loadConfig } from '../control/config/config.js';
import { ConfigError } from '../contract/settings-reader.js';
import { connectDatabase, withoutStatementTimeout } from '../control/db/database.js';
import { dependencyOutage } from '../control/db/dependency-outage.js';
import { startControl, type TestControl } from './support/control-harness.js';

/** Postgres's SQLSTATE for a statement cancelled by statement_timeout (query_canceled). */
const QUERY_CANCELED = '57014';

const failureOf = async (work: () => Promise<unknown>): Promise<Error & { code?: string }> => {
  try {
    await work();
  } catch (error) {
    return error as Error & { code?: string };
  }
  throw new Error('expected the statement to be cancelled');
};

/**
 * DATABASE_STATEMENT_TIMEOUT_MS: Postgres cancels a statement of the control API that runs
 * longer, on every connection of the pool, except in migrations.
 */
describe('database statement timeout', function () {
  this.timeout(60_000);

  describe('on a pool', () => {
    const adminUrl = () => process.env.TEST_TEMPLATE_DATABASE_URL!.replace(/\/[^/]+$/, '/postgres');
    // Long enough that Postgres's own bookkeeping (knex's migration tables) passes under load.
    const TIMEOUT_MS = 1000;
    let db: Knex;
    let admin: Knex; // without the timeout: CREATE DATABASE may take a while on a busy machine
    before(() => {
      db = connectDatabase(adminUrl(), { min: 0, max: 2 }, TIMEOUT_MS);
      admin = connectDatabase(adminUrl(), { min: 0, max: 1 });
    });
    after(async () => {
      await db?.destroy();
      await admin?.destroy();
    });

    it('is set on every connection, and a longer statement fails with 57014 while the pool goes on serving', async () => {
      const settings = await Promise.all([1, 2].map(() => db.transaction(async (trx) => (await trx.raw('SHOW statement_timeout')).rows[0].statement_timeout)));
      assert.deepEqual(settings, ['1s', '1s']);

      const error = await failureOf(() => db.raw('SELECT pg_sleep(5)'));
      assert.equal(error.code, QUERY_CANCELED, String(error));
      assert.match(error.message, /canceling statement due to statement timeout/);
      // Postgres answered: not an outage, so the API treats it as any other failed statement.
      assert.equal(dependencyOutage(error), undefined);
      assert.deepEqual((await db.raw('SELECT 1 AS one')).rows, [{ one: 1 }]);
    });

    it('does not apply inside a migration, which may take longer', async () => {
      const database = `tmo_${randomBytes(4).toString('hex')}`;
      await admin.raw(`CREATE DATABASE ${database}`);
      const target = connectDatabase(adminUrl().replace(/\/postgres$/, `/${database}`), { min: 0, max: 1 }, TIMEOUT_MS);
      const slow: Knex.Migration = { up: async (knex) => knex.raw('SELECT pg_sleep(1.5)'), down: async () => undefined };
      const migrateWith = (migration: Knex.Migration, tableName: string) =>
        target.migrate.latest({
          tableName,
          migrationSource: { getMigrations: async () => ['slow'], getMigrationName: (name: string) => name, getMigration: async () => migration },
        });
      try {
        // The same migration, without the wrapper migrate() puts around each one, is cancelled.
        const bare = await failureOf(() => migrateWith(slow, 'bare_migrations'));
        assert.equal(bare.code, QUERY_CANCELED, String(bare));
        await migrateWith(withoutStatementTimeout(slow), 'lifted_migrations');
        assert.deepEqual((await target('lifted_migrations').select('name')).map((row) => row.name), ['slow']);
        // SET LOCAL ended with the migration's transaction: the connection keeps its timeout.
        assert.equal((await target.raw('SHOW statement_timeout')).rows[0].statement_timeout, '1s');
      } finally {
        await target.destroy();
        await admin.raw(`DROP DATABASE ${database} WITH (FORCE)`);
      }
    });
  });

  describe('setting', () => {
    const base = { DATABASE_URL: 'postgres://localhost/x', REDIS_URL: 'redis://localhost', MASTER_KEY: Buffer.alloc(32).toString('base64') };

    it('defaults to 30 s and refuses a value too small to run the API', () => {
      assert.equal(loadConfig(base).databaseStatementTimeoutMs, 30_000);
      assert.equal(loadConfig({ ...base, DATABASE_STATEMENT_TIMEOUT_MS: '5000' }).databaseStatementTimeoutMs, 5000);
      assert.throws(() => loadConfig({ ...base, DATABASE_STATEMENT_TIMEOUT_MS: '10' }), (error: unknown) =>
        error instanceof ConfigError && error.problems.some((problem) => problem.startsWith('DATABASE_STATEMENT_TIMEOUT_MS: expected an integer from 100')));
    });
  });

  describe('in the control API', () => {
    let control: TestControl;
    let locker: Knex;
    before(async () => {
      control = await startControl({ DATABASE_STATEMENT_TIMEOUT_MS: '1000' });
      locker = connectDatabase(control.config.databaseUrl, { min: 0, max: 1 });
    });
    after(async () => {
      await locker?.destroy();
      await control?.close();
    });

    it('answers a statement cancelled by the timeout as any failed statement (500, nothing revealed) and serves again after', async () => {
      const { token } = await control.signUp();
      // Another session holds the table, so the API's query waits until Postgres cancels it.
      const trx = await locker.transaction();
      let response;
      try {
        await trx.raw('LOCK TABLE agents IN ACCESS EXCLUSIVE MODE');
        response = await control.request('GET', '/agents', { token });
      } finally {
        await trx.rollback();
      }
      assert.equal(response.status, 500, JSON.stringify(response.body));
      assert.equal(response.body.code, 'INTERNAL_ERROR');
      assert.doesNotMatch(JSON.stringify(response.body), /statement|timeout|cancel|agents/i);

      const after = await control.request('GET', '/agents', { token });
      assert.equal(after.status, 200, JSON.stringify(after.body));
    });
  });
});
