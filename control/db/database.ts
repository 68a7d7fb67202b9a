import knex, { type Knex } from 'knex';
import pg from 'pg';
import * as initial from './migrations/001-initial.js';
import * as deployments from './migrations/002-deployments.js';
import * as usage from './migrations/003-usage.js';
import * as deploymentHistory from './migrations/004-deployment-history.js';
import * as parkedAgents from './migrations/005-parked-agents.js';
import * as auditEvents from './migrations/006-audit-events.js';
import * as webhooks from './migrations/007-webhooks.js';
import * as customDomains from './migrations/008-custom-domains.js';
import * as canaryDeployments from './migrations/009-canary-deployments.js';
import * as agentSessions from './migrations/010-agent-sessions.js';
import * as sessionAppends from './migrations/011-session-appends.js';
import * as traces from './migrations/012-traces.js';
import * as accountMembers from './migrations/013-account-members.js';
import * as accountSso from './migrations/014-account-sso.js';
import * as warmParking from './migrations/015-warm-parking.js';
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
  '008-custom-domains': customDomains,
  '009-canary-deployments': canaryDeployments,
  '010-agent-sessions': agentSessions,
  '011-session-appends': sessionAppends,
  '012-traces': traces,
  '013-account-members': accountMembers,
  '014-account-sso': accountSso,
  '015-warm-parking': warmParking,
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
 * Client-side bounds on waiting for Postgres: what a stalled (frozen, overloaded, cut off)
 * server costs a request at most before it is answered 503 DATABASE_UNAVAILABLE. Postgres's
 * own statement_timeout cannot do this: a server that does not run does not cancel.
 */
export interface DatabaseClientTimeouts {
  /** Opening a connection, to its first ReadyForQuery (pg `connectionTimeoutMillis`). */
  readonly connectMs: number;
  /** Waiting for a connection of the pool, opening one included (knex `acquireConnectionTimeout`). */
  readonly acquireMs: number;
  /** Waiting for one statement's reply (pg `query_timeout`); the connection is then closed (closeOnQueryTimeout). */
  readonly queryMs: number;
}

/**
 * A knex pool on `url`. With `statementTimeoutMs`, every connection of the pool asks
 * Postgres to cancel a statement running longer (SQLSTATE 57014), so a query stuck on a
 * lock or a runaway plan frees its connection instead of holding it for good; node-postgres
 * sends it in the startup message (pg/lib/client.js getStartupConf, `statement_timeout`).
 * With `timeouts`, the pool also stops waiting on a server that does not answer; without
 * them (operator commands, tests' own pools) it waits up to 10 s for a connection and
 * for replies as long as they take.
 */
export const DEFAULT_POOL = { min: 0, max: 10 };

export function connectDatabase(url: string, pool = DEFAULT_POOL, statementTimeoutMs?: number, timeouts?: DatabaseClientTimeouts): Database {
  const connection: Knex.PgConnectionConfig = { connectionString: url };
  if (statementTimeoutMs !== undefined) connection.statement_timeout = statementTimeoutMs;
  if (timeouts) {
    connection.connectionTimeoutMillis = timeouts.connectMs;
    connection.query_timeout = timeouts.queryMs;
  }
  const db = knex({
    client: 'pg',
    connection: statementTimeoutMs === undefined && !timeouts ? url : connection,
    pool: timeouts ? { ...pool, afterCreate: closeOnQueryTimeout } : pool,
    // Timestamps come back as Date objects; counts (bigint) are parsed where read.
    acquireConnectionTimeout: timeouts?.acquireMs ?? 10_000,
  });
  // So that the control API answers 503 DATABASE_UNAVAILABLE while Postgres is away. The
  // pool drops broken connections and opens new ones on demand: recovery needs no restart.
  markOutages(db);
  return db;
}

type QueryCallback = (error: Error | null, result: unknown) => void;
type Query = (...args: unknown[]) => unknown;

/**
 * pg's query_timeout answers the caller but leaves the statement on its connection, whose
 * reply may still come (pg/lib/client.js Client.query, "Query read timeout"): every later
 * statement there, a transaction's ROLLBACK first, would queue behind it and time out in
 * turn, and the pool would hand the connection out again. So the connection is closed as
 * pg closes one in pipeline mode: its socket is destroyed, pg fails what was queued on it
 * ("Connection terminated unexpectedly", an outage), and knex's 'error' listener marks it
 * disposed, so the pool drops it (knex dialects/postgres _acquireOnlyConnection).
 */
function closeOnQueryTimeout(connection: pg.Client, done: (error: Error | null, connection: pg.Client) => void): void {
  const query = connection.query.bind(connection) as Query;
  const stream = () => (connection as unknown as { connection: { stream: { destroy(): void } } }).connection.stream;
  // knex runs every statement as connection.query(config, callback) (dialects/postgres _query); other calls pass through.
  (connection as unknown as { query: Query }).query = (...args: unknown[]) => {
    const [config, callback] = args;
    if (args.length !== 2 || typeof callback !== 'function') return query(...args);
    return query(config, (error: Error | null, result: unknown) => {
      if (error?.message === 'Query read timeout') stream().destroy();
      (callback as QueryCallback)(error, result);
    });
  };
  done(null, connection);
}

/** `db`'s connection settings without a client-side statement deadline: for work that may legitimately wait (a migration, its lock). */
function patientConnection(db: Database): string | Knex.PgConnectionConfig {
  const connection = db.client.config.connection as string | Knex.PgConnectionConfig;
  if (typeof connection === 'string' || connection.query_timeout === undefined) return connection;
  const { query_timeout: _dropped, ...rest } = connection;
  // knex hides the password from enumeration (setHiddenProperty), so a spread would drop it.
  return { ...rest, password: connection.password };
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
  await underMigrationLock(db, (migrator) => migrator.migrate.latest({ migrationSource }));
}

/**
 * Undoes the newest migration with its `down` (its tables or columns go, and the data in
 * them): what rolling a release back across a migration needs, run by that release's code,
 * since an older release refuses to start on a database with a migration it does not know.
 * Returns the migration undone, or null when there was none.
 */
export async function undoLastMigration(db: Database): Promise<string | null> {
  const [, undone] = (await underMigrationLock(db, (migrator) => migrator.migrate.down({ migrationSource }))) as [number, string[]];
  return undone[0] ?? null;
}

/** Migrations applied to the database and those this release would still apply. */
export async function migrationStatus(db: Database): Promise<{ applied: string[]; pending: string[] }> {
  const [completed, pending] = (await db.migrate.list({ migrationSource })) as [{ name: string }[], string[]];
  return { applied: completed.map((migration) => migration.name), pending };
}

/**
 * A pool whose statements are cut off client-side (DatabaseClientTimeouts) would cut off a
 * long migration and the wait for the lock: those run on a pool of their own without it.
 */
async function underMigrationLock<T>(db: Database, work: (migrator: Database) => Promise<T>): Promise<T> {
  const connection = patientConnection(db);
  const holder = new pg.Client(connection as string | pg.ClientConfig);
  // Losing this connection mid-migration must not crash the process: knex's lock row still keeps copies apart.
  holder.on('error', () => undefined);
  await holder.connect();
  try {
    await holder.query('SET statement_timeout = 0');
    await holder.query('SELECT pg_advisory_lock($1, $2)', [...MIGRATION_LOCK]);
    if (connection === db.client.config.connection) return await work(db);
    const migrator = knex({ client: 'pg', connection, pool: { min: 0, max: 2 } });
    try {
      return await work(migrator);
    } finally {
      await migrator.destroy();
    }
  } finally {
    await holder.end();
  }
}

/**
 * Resolves once Postgres answers a statement: the readiness probe. It asks on a connection
 * of its own, closed afterwards, not a pooled one: a pool whose connections are all taken
 * (by requests waiting on Redis inside their transactions, say) is not Postgres being
 * down, and /readyz must name the dependency that is. Probes at the same time share one
 * connection, so a flood of /readyz (unauthenticated) cannot use up Postgres's.
 */
export function pingDatabase(db: Database): Promise<void> {
  let probe = probes.get(db);
  if (!probe) {
    probe = askOnOwnConnection(db.client.config.connection as string | pg.ClientConfig).finally(() => probes.delete(db));
    probes.set(db, probe);
  }
  return probe;
}

const probes = new WeakMap<Database, Promise<void>>();

/** How long a probe may take when the pool sets no client timeouts: it must settle, or every later probe would share it. */
const PROBE_FALLBACK_TIMEOUT_MS = 5_000;

async function askOnOwnConnection(connection: string | pg.ClientConfig): Promise<void> {
  const given: pg.ClientConfig = typeof connection === 'string' ? { connectionString: connection } : connection;
  const client = new pg.Client({
    ...given,
    // knex hides the password from enumeration (setHiddenProperty), so the spread above dropped it.
    password: given.password,
    connectionTimeoutMillis: given.connectionTimeoutMillis ?? PROBE_FALLBACK_TIMEOUT_MS,
    query_timeout: given.query_timeout ?? PROBE_FALLBACK_TIMEOUT_MS,
  });
  // A connection that breaks later must not crash the process; the caller has its answer.
  client.on('error', () => undefined);
  try {
    await client.connect();
    await client.query('select 1');
  } finally {
    // Not awaited: a stalled server never acknowledges the goodbye.
    client.end().catch(() => undefined);
  }
}
