import type { Knex } from 'knex';

/**
 * The audit log (issue 20): one row per state-changing call, written in the transaction of
 * the change. Rows go with their account. `actor_user_id` is the person behind a user or
 * API-key actor (what the actor_id filter also matches); `agent_id` is the agent an event is
 * about, or whose access key it concerns (the agent_id filter). No foreign key on the
 * actor or the agent: the log outlives them.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('audit_events', (t) => {
    t.text('id').primary();
    // Insertion order: events of one millisecond (a manual clock, a busy account) still list in the order they happened.
    t.specificType('seq', 'bigserial').notNullable();
    t.text('account_id').notNullable().references('accounts.id').onDelete('CASCADE');
    t.timestamp('at', { useTz: true }).notNullable();
    t.text('action').notNullable();
    t.text('actor_type').notNullable();
    t.text('actor_id').nullable();
    t.text('actor_user_id').nullable();
    t.text('actor_email').nullable();
    t.text('target_type').notNullable();
    t.text('target_id').nullable();
    t.text('agent_id').nullable();
    t.text('request_id').nullable();
    t.text('ip').nullable();
    t.jsonb('details').notNullable().defaultTo('{}');
  });
  await knex.raw("ALTER TABLE audit_events ADD CONSTRAINT audit_events_actor_type_check CHECK (actor_type IN ('user','api_key','system'))");
  // The listing is newest first within an account, optionally narrowed by one filter.
  await knex.raw('CREATE INDEX audit_events_account_at ON audit_events (account_id, at DESC, seq DESC)');
  await knex.raw('CREATE INDEX audit_events_account_action_at ON audit_events (account_id, action, at DESC)');
  await knex.raw('CREATE INDEX audit_events_account_agent_at ON audit_events (account_id, agent_id, at DESC) WHERE agent_id IS NOT NULL');
  await knex.raw('CREATE INDEX audit_events_account_actor_at ON audit_events (account_id, actor_id, at DESC)');
  await knex.raw('CREATE INDEX audit_events_account_actor_user_at ON audit_events (account_id, actor_user_id, at DESC) WHERE actor_user_id IS NOT NULL');
  // Housekeeping prunes by age across accounts.
  await knex.raw('CREATE INDEX audit_events_at ON audit_events (at)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('audit_events');
}
