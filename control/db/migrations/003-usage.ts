import type { Knex } from 'knex';

/**
 * The bill's raw material. Rows outlive their agent (no foreign key to agents): deleting
 * an agent must not erase what it used this month. They go with their account.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('replica_intervals', (t) => {
    t.bigIncrements('id');
    t.text('account_id').notNullable().references('accounts.id').onDelete('CASCADE');
    t.text('agent_id').notNullable();
    t.text('replica_id').notNullable();
    t.decimal('cpu', 8, 3).notNullable();
    t.integer('memory_mb').notNullable();
    t.timestamp('started_at', { useTz: true }).notNullable();
    t.timestamp('stopped_at', { useTz: true }).nullable();
    // Moved forward by every meter pass: where a crash-left interval is closed.
    t.timestamp('last_seen_at', { useTz: true }).notNullable();
  });
  // One open interval per replica, even with several control API copies metering at once.
  await knex.raw('CREATE UNIQUE INDEX replica_intervals_open ON replica_intervals (replica_id) WHERE stopped_at IS NULL');
  await knex.raw('CREATE INDEX replica_intervals_account ON replica_intervals (account_id, started_at)');

  await knex.schema.createTable('request_counts', (t) => {
    t.text('account_id').notNullable().references('accounts.id').onDelete('CASCADE');
    t.text('agent_id').notNullable();
    t.text('month').notNullable(); // YYYY-MM, UTC, as authz names its counters
    t.bigInteger('count').notNullable();
    t.primary(['agent_id', 'month']);
    t.index(['account_id', 'month']);
  });

  // Each flush of a Redis counter is applied once: a retry after a crash finds its id here.
  await knex.schema.createTable('usage_flushes', (t) => {
    t.text('flush_id').primary();
    t.timestamp('flushed_at', { useTz: true }).notNullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  for (const table of ['usage_flushes', 'request_counts', 'replica_intervals']) await knex.schema.dropTableIfExists(table);
}
