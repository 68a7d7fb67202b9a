import type { Knex } from 'knex';
import type pg from 'pg';
import { isConnectionFailure, markOutage } from './outage.js';

/**
 * A statement of a hot path, sent to Postgres under a name, so each connection parses and
 * plans it once and then only binds and executes it, on a connection of the knex pool but
 * not through knex's runner. Agents' session calls make one such statement each, hundreds a
 * second: knex's runner, bindings formatter and result handling cost about 90 µs of the
 * control API's CPU per statement, a fifth of a session read's (measured over 3,000 calls,
 * knex.raw with `.options({ name })` against the same statement here).
 *
 * Written with knex's named bindings (`:name`), turned once into Postgres's `$n`, a name
 * used twice being one parameter. What knex adds on the way is kept: the connection comes
 * from `db.client.acquireConnection`, which marks a failure to get one as an outage
 * (outage.ts, markOutages); a statement failing for its connection is marked here as
 * knex's `query-error` listener would; the query goes through `connection.query(config,
 * callback)`, where closeOnQueryTimeout (database.ts) hooks in; and a connection that broke
 * is dropped by the pool on release (knex dialects/postgres `_acquireOnlyConnection`).
 */
export class PreparedStatement<Row> {
  /**
   * Pools whose server would not keep a name: a connection pooler in transaction mode that
   * does not track prepared statements (PgBouncer before 1.21, or with
   * `max_prepared_statements = 0`, its FAQ "How to use prepared statements with
   * transaction pooling?") hands each transaction whichever server connection is free, so
   * a name parsed on one is missing on the next (26000) or already taken (42P05). Either
   * fails at Parse or Bind, before anything runs, so the statement is sent again unnamed,
   * and so is every statement on that pool from then on.
   */
  private static readonly namesRefused = new WeakSet<object>();

  private readonly text: string;
  private readonly parameters: string[] = [];

  constructor(
    private readonly name: string,
    namedSql: string,
  ) {
    // `:name`, not the `::int` of a cast.
    this.text = namedSql.replace(/(?<![:\w]):([A-Za-z_]\w*)/g, (_, parameter: string) => {
      if (!this.parameters.includes(parameter)) this.parameters.push(parameter);
      return `$${this.parameters.indexOf(parameter) + 1}`;
    });
  }

  /** The rows the statement returns, run on `db`'s pool; never in a transaction, whose connection it would not be on. */
  async run(db: Knex, values: Record<string, unknown>): Promise<Row[]> {
    if ((db as { isTransaction?: boolean }).isTransaction) throw new Error(`${this.name} runs on the pool, outside any transaction`);
    const ordered = this.parameters.map((parameter) => valueOf(values, parameter));
    const named = !PreparedStatement.namesRefused.has(db.client);
    const connection = (await db.client.acquireConnection()) as pg.Client;
    try {
      try {
        return await query<Row>(connection, named ? { name: this.name, text: this.text, values: ordered } : { text: this.text, values: ordered });
      } catch (error) {
        if (!named || !NAME_LOST.has((error as { code?: string }).code ?? '')) throw error;
        PreparedStatement.namesRefused.add(db.client);
        return await query<Row>(connection, { text: this.text, values: ordered });
      }
    } catch (error) {
      if (isConnectionFailure(error)) markOutage(error);
      throw error;
    } finally {
      await db.client.releaseConnection(connection);
    }
  }
}

/** SQLSTATEs of a name the server does not hold as it was parsed: 26000 invalid_sql_statement_name, 42P05 duplicate_prepared_statement. */
const NAME_LOST = new Set(['26000', '42P05']);

/** Through `connection.query(config, callback)`, the form closeOnQueryTimeout (database.ts) hooks. */
function query<Row>(connection: pg.Client, config: pg.QueryConfig): Promise<Row[]> {
  return new Promise<Row[]>((resolve, reject) => {
    connection.query(config, (error: Error | null, result: pg.QueryResult) => (error ? reject(error) : resolve(result.rows as Row[])));
  });
}

function valueOf(values: Record<string, unknown>, parameter: string): unknown {
  if (!(parameter in values)) throw new Error(`no value for :${parameter}`);
  return values[parameter];
}
