import type { Knex } from 'knex';

/**
 * When the platform parked an auto-scaled agent at 0 replicas for want of requests
 * (issue 19); null otherwise. A parked agent is `running` with 0 replicas and its next
 * request wakes it, where an agent its owner set to 0 replicas is `stopped` and stays so.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('agents', (t) => {
    t.timestamp('parked_at', { useTz: true }).nullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('agents', (t) => {
    t.dropColumn('parked_at');
  });
}
