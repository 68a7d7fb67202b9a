import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('agents', (t) => {
    // The agent version of the last deploy: replicas of older deploys are rolled out.
    // Scaling changes the version (configuration) but not this, so it starts no rollout.
    t.integer('deployed_version').nullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('agents', (t) => t.dropColumn('deployed_version'));
}
