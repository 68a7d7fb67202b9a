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
    const config = { name: this.name, text: this.text, values: this.parameters.map((parameter) => valueOf(values, parameter)) };
    const connection = (await db.client.acquireConnection()) as pg.Client;
    try {
      return await new Promise<Row[]>((resolve, reject) => {
        connection.query(config, (error: Error | null, result: pg.QueryResult) => (error ? reject(error) : resolve(result.rows as Row[])));
      });
    } catch (error) {
      if (isConnectionFailure(error)) markOutage(error);
      throw error;
    } finally {
      await db.client.releaseConnection(connection);
    }
  }
}

function valueOf(values: Record<string, unknown>, parameter: string): unknown {
  if (!(parameter in values)) throw new Error(`no value for :${parameter}`);
  return values[parameter];
}
