import type { Knex } from 'knex';

/**
 * Traces of agents' invokes (issue 38), sent by replicas through the agent services
 * endpoint as OTLP/HTTP. Both tables are partitioned by UTC day, so retention
 * (TRACE_RETENTION_DAYS) drops a day's partition whole instead of deleting rows one by one
 * (docs/decisions.md, "Traces in day partitions of Postgres"). The partitions themselves
 * are made by the control API (repositories/traces.ts), ahead of time and on demand: a
 * migration runs once, days keep coming.
 *
 * `trace_spans`: one row per span, its GenAI figures (model, tokens, cost) lifted out of
 * its attributes at ingest so the summary need not parse JSON. `trace_invocations`: one
 * row per trace, recomputed from its spans as they arrive; its `day` is fixed when the row
 * is first written, so a later span from before midnight never moves it between partitions.
 *
 * `model_usage`: the month's tokens and estimated cost per agent, for GET /account/usage,
 * added to as spans are first stored (a span sent again adds nothing). Like
 * `request_counts`, it outlives the agent and goes with its account: it is the bill.
 *
 * Partitioned tables take no foreign keys to `agents` here: a trigger deletes an agent's
 * traces with it, whether the agent is deleted alone or with its account.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE trace_spans (
      agent_id text NOT NULL,
      trace_id text NOT NULL,
      span_id text NOT NULL,
      parent_span_id text,
      name text NOT NULL,
      kind smallint NOT NULL,
      start_time timestamptz NOT NULL,
      end_time timestamptz NOT NULL,
      status_code smallint NOT NULL,
      status_message text,
      operation text,
      model text,
      input_tokens bigint,
      output_tokens bigint,
      cost_usd numeric,
      attributes jsonb NOT NULL,
      PRIMARY KEY (agent_id, trace_id, span_id, start_time)
    ) PARTITION BY RANGE (start_time)`);
  await knex.raw(`
    CREATE TABLE trace_invocations (
      agent_id text NOT NULL,
      trace_id text NOT NULL,
      day date NOT NULL,
      started_at timestamptz NOT NULL,
      duration_ms double precision NOT NULL,
      status text NOT NULL,
      session_id text,
      models text[] NOT NULL,
      input_tokens bigint NOT NULL,
      output_tokens bigint NOT NULL,
      cost_usd numeric,
      tool_calls integer NOT NULL,
      span_count integer NOT NULL,
      PRIMARY KEY (agent_id, trace_id, day)
    ) PARTITION BY RANGE (day)`);
  // The owner's listing: an agent's invocations, newest first.
  await knex.raw('CREATE INDEX trace_invocations_agent_started ON trace_invocations (agent_id, started_at DESC)');
  // A trace's row is looked up by (agent, trace) across days, as the partitioned primary key includes the day.
  await knex.raw('CREATE INDEX trace_invocations_agent_trace ON trace_invocations (agent_id, trace_id)');
  await knex.schema.createTable('model_usage', (t) => {
    t.text('account_id').notNullable().references('accounts.id').onDelete('CASCADE');
    t.text('agent_id').notNullable();
    t.text('month').notNullable(); // YYYY-MM, UTC, as request_counts
    t.bigInteger('input_tokens').notNullable();
    t.bigInteger('output_tokens').notNullable();
    /** The priced model calls' cost; those without a price are counted in unpriced_calls instead. */
    t.decimal('cost_usd', null).notNullable();
    t.bigInteger('unpriced_calls').notNullable();
    t.primary(['agent_id', 'month']);
    t.index(['account_id', 'month']);
  });
  await knex.raw(`
    CREATE FUNCTION delete_agent_traces() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      DELETE FROM trace_spans WHERE agent_id = OLD.id;
      DELETE FROM trace_invocations WHERE agent_id = OLD.id;
      RETURN OLD;
    END $$`);
  await knex.raw('CREATE TRIGGER agents_delete_traces AFTER DELETE ON agents FOR EACH ROW EXECUTE FUNCTION delete_agent_traces()');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TRIGGER IF EXISTS agents_delete_traces ON agents');
  await knex.raw('DROP FUNCTION IF EXISTS delete_agent_traces()');
  // Dropping a partitioned table drops its partitions.
  await knex.raw('DROP TABLE IF EXISTS trace_spans');
  await knex.raw('DROP TABLE IF EXISTS trace_invocations');
  await knex.schema.dropTableIfExists('model_usage');
}
