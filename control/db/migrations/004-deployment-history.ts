import type { Knex } from 'knex';

/**
 * Every rollout of an agent (a deploy, a create that deploys, a rollback) and its progress.
 * A deployment keeps its own copy of the configuration, secrets sealed as in `agents`,
 * so a later change of the agent never alters what a rollback to it restores. They go
 * with their agent.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('deployments', (t) => {
    t.text('id').primary();
    t.text('agent_id').notNullable().references('agents.id').onDelete('CASCADE');
    t.text('account_id').notNullable().references('accounts.id').onDelete('CASCADE');
    t.integer('number').notNullable(); // 1, 2, 3 … per agent
    t.integer('agent_version').notNullable(); // the agent's version, and the job version the drivers roll out
    t.text('status').notNullable();
    // The rolled-out configuration: deploy (secret values sealed), model, sealed model key, system prompt.
    t.jsonb('deploy').notNullable();
    t.text('model').notNullable();
    t.text('provider').notNullable();
    t.text('api_key_sealed').nullable();
    t.text('system_prompt').nullable();
    t.text('rollback_of').nullable();
    t.text('created_by').nullable(); // a user id; null when the platform itself deployed
    t.integer('orchestrator_version').nullable(); // Nomad's job version, for operators reading the Nomad UI
    t.text('error').nullable();
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.timestamp('finished_at', { useTz: true }).nullable();
    t.unique(['agent_id', 'number']);
  });
  await knex.raw('CREATE UNIQUE INDEX deployments_agent_version ON deployments (agent_id, agent_version)');
  await knex.raw(
    "ALTER TABLE deployments ADD CONSTRAINT deployments_status_check CHECK (status IN ('in_progress','succeeded','failed','superseded','cancelled'))",
  );

  // The progress stream's events, in order; the id is the stream's Last-Event-ID.
  await knex.schema.createTable('deployment_events', (t) => {
    t.bigIncrements('id');
    t.text('deployment_id').notNullable().references('deployments.id').onDelete('CASCADE');
    t.text('phase').notNullable();
    t.text('replica_id').nullable();
    t.text('message').notNullable();
    t.timestamp('at', { useTz: true }).notNullable();
    t.index(['deployment_id', 'id']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('deployment_events');
  await knex.schema.dropTableIfExists('deployments');
}
