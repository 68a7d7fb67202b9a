import knex, { type Knex } from 'knex';
import * as initial from './migrations/001-initial.js';
import * as deployments from './migrations/002-deployments.js';
import * as usage from './migrations/003-usage.js';
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
};

const migrationSource: Knex.MigrationSource<string> = {
  getMigrations: async () => Object.keys(migrations).sort(),
  getMigrationName: (name) => name,
  getMigration: async (name) => migrations[name]!,
};

export function connectDatabase(url: string, pool = { min: 0, max: 10 }): Database {
  const db = knex({
    client: 'pg',
    connection: url,
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
