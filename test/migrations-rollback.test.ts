import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { connectDatabase, migrate, migrationStatus, type Database } from '../control/db/database.js';

/**
 * Rolling a release back across a migration (docs/operations.md, "Rolling back a release"):
 * an older release refuses a database that has a migration it does not know, and
 * `npm run migrate -- down`, run with the newer release, undoes the newest one.
 */
describe('migrations: rolling a release back', function () {
  this.timeout(120_000);
  const serverUrl = () => process.env.TEST_TEMPLATE_DATABASE_URL!.replace(/\/[^/]+$/, '');
  let admin: Database;
  let db: Database;
  let url: string;
  let name: string;

  beforeEach(async () => {
    admin = connectDatabase(`${serverUrl()}/postgres`, { min: 0, max: 1 });
    name = `r_${randomBytes(5).toString('hex')}`;
    await admin.raw(`CREATE DATABASE ${name}`);
    url = `${serverUrl()}/${name}`;
    db = connectDatabase(url, { min: 0, max: 2 });
    await migrate(db);
  });
  afterEach(async () => {
    await db.destroy();
    await admin.raw(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.destroy();
  });

  const runMigrate = (command: string) =>
    new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
      execFile(process.execPath, ['--import', 'tsx', 'control/migrate.ts', command], { env: { ...process.env, DATABASE_URL: url }, timeout: 60_000 }, (error, stdout, stderr) =>
        resolve({ code: error ? (typeof error.code === 'number' ? error.code : -1) : 0, stdout, stderr }));
    });
  /** Every column of every table: what a migration changes. */
  const schema = async () =>
    JSON.stringify(await db('information_schema.columns').where({ table_schema: 'public' }).whereNot('table_name', 'like', 'knex_%').orderBy(['table_name', 'column_name']).select('table_name', 'column_name'));

  it('down undoes the newest migration (its schema change goes), status shows it pending, and the next start applies it again', async () => {
    const { applied } = await migrationStatus(db);
    const newest = applied.at(-1)!;
    const migrated = await schema();

    const down = await runMigrate('down');
    assert.equal(down.code, 0, down.stderr);
    assert.match(down.stdout, new RegExp(`Undid ${newest}`));
    assert.match(down.stdout, new RegExp(`Pending \\(applied at the next start of the control API\\): ${newest}`));
    assert.notEqual(await schema(), migrated, `${newest}'s down changed nothing`);
    assert.deepEqual((await migrationStatus(db)).applied, applied.slice(0, -1), 'only the newest migration is undone');

    await migrate(db); // what the control API does at start
    assert.equal(await schema(), migrated);
    assert.deepEqual((await migrationStatus(db)).pending, []);
  });

  it('a release that does not know a migration the database has refuses to start', async () => {
    // As if a newer release had applied its migration 999 and this older one were started.
    await db('knex_migrations').insert({ name: '999-from-a-newer-release', batch: 99, migration_time: new Date() });
    await assert.rejects(migrate(db), /999-from-a-newer-release/);
  });

  it('status and down only: anything else is a usage error', async () => {
    const wrong = await runMigrate('up');
    assert.equal(wrong.code, 2);
    assert.match(wrong.stderr, /status \| down/);
  });
});
