import knex, { type Knex } from 'knex';
import pg from 'pg';
import * as initial from './migrations/001-initial.js';
import * as deployments from './migrations/002-deployments.js';
import * as usage from './migrations/003-usage.js';
import * as deploymentHistory from './migrations/004-deployment-history.js';
import * as parkedAgents from './migrations/005-parked-agents.js';
import * as auditEvents from './migrations/006-audit-events.js';
import * as webhooks from './migrations/007-webhooks.js';
import { markOutages } from './outage.js';

export type Database = Knex;

/**
 * Migrations are imported, not discovered on disk, so they run the same under tsx,
 * compiled JS and a bundled image, and a missing one fails at compile time.
 */
const migrations: Record<string, Knex.Migration> = {
  '001-initial': initial,
  '002-deployments': deployments,
  '003-usage': usage,
  '004-deployment-history': deploymentHistory,
  '005-parked-agents': parkedAgents,
  '006-audit-events': auditEvents,
  '007-webhooks': webhooks,
};

const migrationSource: Knex.MigrationSource<string> = {
  getMigrations: async () => Object.keys(migrations).sort(),
  getMigrationName: (name) => name,
  getMigration: async (name) => withoutStatementTimeout(migrations[name]!),
};

/**
 * A migration that may run longer than a request's statement_timeout (an index built on a
 * large table, say). knex runs migrations inside a transaction (Migrator._waterfallBatch),
 * so SET LOCAL lifts the timeout for that transaction only and the pooled connection
 * keeps its own afterwards (PostgreSQL docs, SET: "SET LOCAL … effects last only till
 * the end of the current transaction").
 */
export function withoutStatementTimeout(migration: Knex.Migration): Knex.Migration {
  return {
    ...migration,
    up: async (trx) => {
      await trx.raw('SET LOCAL statement_timeout = 0');
      return migration.up(trx);
    },
  };
}

/**
 * A knex pool on `url`. With `statementTimeoutMs`, every connection of the pool asks
 * Postgres to cancel a statement running longer (SQLSTATE 57014), so a query stuck on a
 * lock or a runaway plan frees its connection instead of holding it for good; node-postgres
 * sends it in the startup message (pg/lib/client.js getStartupConf, `statement_timeout`).
 */
export const DEFAULT_POOL = { min: 0, max: 10 };

export function connectDatabase(url: string, pool = DEFAULT_POOL, statementTimeoutMs?: number): Database {
  const db = knex({
    client: 'pg',
    connection: statementTimeoutMs === undefined ? url : { connectionString: url, statement_timeout: statementTimeoutMs },
    pool,
    // Timestamps come back as Date objects; counts (bigint) are parsed where read.
    acquireConnectionTimeout: 10_000,
  });
  // So that the control API answers 503 DATABASE_UNAVAILABLE while Postgres is away. The
  // pool drops broken connections and opens new ones on demand: recovery needs no restart.
  markOutages(db);
  return db;
}

/** The advisory lock copies of the control API (and `npm run admin`) take turns on to migrate; apart from the loops' (loop-locks.ts). */
export const MIGRATION_LOCK = [0x61_67_6e, 0x6d_69_67] as const; // "agn", "mig"

/**
 * Runs pending migrations, one copy at a time: the copy that holds a Postgres advisory lock
 * migrates, the others wait for it and then find nothing left to run. knex's own lock row is
 * not enough: on a new database two copies race to create knex's tables and one fails
 * (test/migrations-concurrency.test.ts), and a copy waiting on that row is cancelled by
 * statement_timeout while a long migration runs. The lock is held on a connection of its
 * own, outside the pool (which may have a single connection), without a statement timeout,
 * and ends with that session, so a copy that dies while migrating frees it.
 */
export async function migrate(db: Database): Promise<void> {
  await underMigrationLock(db, () => db.migrate.latest({ migrationSource }));
}

/**
 * Undoes the newest migration with its `down` (its tables or columns go, and the data in
 * them): what rolling a release back across a migration needs, run by that release's code,
 * since an older release refuses to start on a database with a migration it does not know.
 * Returns the migration undone, or null when there was none.
 */
export async function undoLastMigration(db: Database): Promise<string | null> {
  const [, undone] = (await underMigrationLock(db, () => db.migrate.down({ migrationSource }))) as [number, string[]];
  return undone[0] ?? null;
}

/** Migrations applied to the database and those this release would still apply. */
export async function migrationStatus(db: Database): Promise<{ applied: string[]; pending: string[] }> {
  const [completed, pending] = (await db.migrate.list({ migrationSource })) as [{ name: string }[], string[]];
  return { applied: completed.map((migration) => migration.name), pending };
}

async function underMigrationLock<T>(db: Database, work: () => Promise<T>): Promise<T> {
  const holder = new pg.Client(db.client.config.connection as string | pg.ClientConfig);
  // Losing this connection mid-migration must not crash the process: knex's lock row still keeps copies apart.
  holder.on('error', () => undefined);
  await holder.connect();
  try {
    await holder.query('SET statement_timeout = 0');
    await holder.query('SELECT pg_advisory_lock($1, $2)', [...MIGRATION_LOCK]);
    return await work();
  } finally {
    await holder.end();
  }
}

/** Resolves once Postgres answers a statement on a pooled connection: the readiness probe. */
export async function pingDatabase(db: Database): Promise<void> {
  await db.raw('select 1');
}
