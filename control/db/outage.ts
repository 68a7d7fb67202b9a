import knex, { type Knex } from 'knex';
import pg from 'pg';

/**
 * Which errors mean "Postgres cannot serve now" rather than "this query is wrong". The
 * errors are marked where they arise, on this knex instance, so a refused connection of
 * some other client (an orchestrator's HTTP call, say) is never taken for the database's.
 */
const outages = new WeakSet<object>();

export const isDatabaseOutage = (error: unknown): boolean => typeof error === 'object' && error !== null && outages.has(error);

/**
 * Marks `db`'s outage errors: every failure to get a connection (Postgres down, refusing,
 * starting up, out of slots, or the pool's acquire timeout), and every query that failed
 * because its connection did. knex emits `query-error` for every query, in or out of a
 * transaction (execution/internal/query-executioner.js executeQuery), before the caller's
 * promise rejects, and rethrows the same error object.
 */
export function markOutages(db: Knex): void {
  const acquire = db.client.acquireConnection.bind(db.client);
  // Transactions take their connection through this same method (execution/transaction.js acquireConnection).
  db.client.acquireConnection = async () => {
    try {
      return await acquire();
    } catch (error) {
      mark(error);
      throw error;
    }
  };
  db.on('query-error', (error: unknown) => {
    if (isConnectionFailure(error)) mark(error);
  });
}

/** Marks `error` as an outage: for statements run on the pool without knex's query events (prepared-statement.ts). */
export function markOutage(error: unknown): void {
  mark(error);
}

function mark(error: unknown): void {
  if (typeof error === 'object' && error !== null) outages.add(error);
}

// SQLSTATEs of a server that cannot serve (PostgreSQL, Appendix A "Error Codes";
// src/backend/utils/errcodes.txt): class 08 connection exception, class 53 insufficient
// resources (too many connections, disk full, out of memory), and of class 57 operator
// intervention 57P01 admin_shutdown, 57P02 crash_shutdown, 57P03 cannot_connect_now.
const UNAVAILABLE_SQLSTATE = /^(08|53)|^57P0[123]$/;

// node-postgres's own errors for a connection that broke under a query (pg/lib/client.js:
// Client._handleErrorEvent / _handleEnd "Connection terminated…", Client.connect "timeout
// expired", Client.query "…is not queryable", Query read timeout). knex puts the SQL in
// front of the message (executeQuery), so only the end is compared.
const PG_CONNECTION_MESSAGES = [
  'Connection terminated unexpectedly',
  'Connection terminated',
  'timeout expired',
  'Query read timeout',
  'Client has encountered a connection error and is not queryable',
  'Client was closed and is not queryable',
];

/** A failed query whose cause is the connection or the server's state, not the statement. */
export function isConnectionFailure(error: unknown): boolean {
  if (error instanceof knex.KnexTimeoutError) return true;
  if (error instanceof pg.DatabaseError) return UNAVAILABLE_SQLSTATE.test(error.code ?? '');
  if (!(error instanceof Error)) return false;
  // A socket error on the connection (ECONNRESET, EPIPE, ETIMEDOUT…), as Node names system errors.
  const code = (error as NodeJS.ErrnoException).code;
  if (typeof code === 'string' && /^E[A-Z]+$/.test(code)) return true;
  return PG_CONNECTION_MESSAGES.some((message) => error.message.endsWith(message));
}
