import type { Knex } from 'knex';

/**
 * Webhooks (issue 20): an account's endpoints, the outbox of events still to deliver, and
 * the attempts made. An event is fanned out when it is written, one outbox row per
 * subscribed webhook, in the transaction that caused it, so each endpoint has its own
 * retry schedule; a row leaves the outbox once delivered or given up, and its attempts stay
 * in webhook_deliveries (the last 100 per webhook). All of it goes with its webhook, and the
 * webhooks with their account.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('webhooks', (t) => {
    t.text('id').primary();
    t.text('account_id').notNullable().references('accounts.id').onDelete('CASCADE');
    t.text('url').notNullable();
    t.specificType('events', 'text[]').notNullable();
    t.text('description').nullable();
    t.text('secret_sealed').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.index(['account_id', 'created_at']);
  });

  await knex.schema.createTable('webhook_outbox', (t) => {
    t.bigIncrements('id');
    t.text('webhook_id').notNullable().references('webhooks.id').onDelete('CASCADE');
    // The webhook-id header: the same on every attempt, so a receiver can drop repeats.
    t.text('event_id').notNullable();
    t.text('event_type').notNullable();
    // The exact bytes signed and sent on every attempt.
    t.text('body').notNullable();
    t.integer('attempts').notNullable().defaultTo(0);
    // When the next attempt is due; a claim moves it past its delivery's deadline, so a copy that dies mid-attempt leaves it to be retried.
    t.timestamp('next_attempt_at', { useTz: true }).notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable();
  });
  await knex.raw('CREATE INDEX webhook_outbox_due ON webhook_outbox (next_attempt_at)');
  await knex.raw('CREATE INDEX webhook_outbox_webhook ON webhook_outbox (webhook_id)');

  await knex.schema.createTable('webhook_deliveries', (t) => {
    t.bigIncrements('id');
    t.text('webhook_id').notNullable().references('webhooks.id').onDelete('CASCADE');
    t.text('event_id').notNullable();
    t.text('event_type').notNullable();
    t.integer('attempt').notNullable();
    t.integer('status_code').nullable();
    t.integer('duration_ms').notNullable();
    t.text('error').nullable();
    t.timestamp('at', { useTz: true }).notNullable();
    t.index(['webhook_id', 'id']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('webhook_deliveries');
  await knex.schema.dropTableIfExists('webhook_outbox');
  await knex.schema.dropTableIfExists('webhooks');
}
