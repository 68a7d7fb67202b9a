import knex, { type Knex } from 'knex';
import * as initial from './migrations/001-initial.js';
import * as deployments from './migrations/002-deployments.js';
import * as usage from './migrations/003-usage.js';
import * as deploymentHistory from './migrations/004-deployment-history.js';
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

/** Runs pending migrations; knex holds its own lock table so concurrent starts take turns. */
export async function migrate(db: Database): Promise<void> {
  await db.migrate.latest({ migrationSource });
}

/** Resolves once Postgres answers a statement on a pooled connection: the readiness probe. */
export async function pingDatabase(db: Database): Promise<void> {
  await db.raw('select 1');
}
