import type { Knex } from 'knex';

/**
 * Canary deploys (issue 36). `deployments.strategy`: the canary settings a deployment was
 * asked with, null for a rolling one. `agents.canary`: the canary running now (its
 * deployment, the stable deployment it runs beside, its settings and start), null
 * otherwise: what the runner builds two versions' jobs from, the edge projects its split
 * from, and the judge watches. Cleared by the promote or abort that ends it, in the
 * transaction that ends it.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('deployments', (t) => {
    t.jsonb('strategy').nullable();
  });
  await knex.schema.alterTable('agents', (t) => {
    t.jsonb('canary').nullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('agents', (t) => {
    t.dropColumn('canary');
  });
  await knex.schema.alterTable('deployments', (t) => {
    t.dropColumn('strategy');
  });
}
