import type { Knex } from 'knex';

/**
 * Custom domains (issue 34): hostnames an agent is reached by besides its platform one, and
 * the ACME account that orders their certificates. A hostname belongs to one agent in the
 * whole platform: the UNIQUE index, not a read before the insert, decides a race between two
 * accounts claiming it. Domains go with their agent, and agents with their account.
 * Private keys (the certificate's, the ACME account's) are sealed with the master keys, like
 * every other secret, and re-sealed by key rotation.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('agent_domains', (t) => {
    t.text('id').primary();
    t.text('account_id').notNullable().references('accounts.id').onDelete('CASCADE');
    t.text('agent_id').notNullable().references('agents.id').onDelete('CASCADE');
    // Lower case, no trailing dot: control/domain/custom-domain.ts writes it so.
    t.text('hostname').notNullable().unique();
    t.text('status').notNullable();
    // The TXT record's value the user publishes: proof of control, not a secret.
    t.text('verification_value').notNullable();
    // The resolver's or the CA's reason of the last failure; null once it passes.
    t.text('reason').nullable();
    t.text('certificate_pem').nullable();
    t.text('private_key_sealed').nullable();
    t.text('certificate_serial').nullable();
    t.timestamp('certificate_not_before', { useTz: true }).nullable();
    t.timestamp('certificate_not_after', { useTz: true }).nullable();
    t.timestamp('renew_after', { useTz: true }).nullable();
    t.timestamp('next_attempt_at', { useTz: true }).nullable();
    t.integer('attempts').notNullable().defaultTo(0);
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.timestamp('updated_at', { useTz: true }).notNullable();
    t.timestamp('verified_at', { useTz: true }).nullable();
    t.timestamp('issued_at', { useTz: true }).nullable();
    t.index(['agent_id', 'created_at']);
    t.index(['account_id']);
  });
  await knex.raw(`ALTER TABLE agent_domains ADD CONSTRAINT agent_domains_status_check
    CHECK (status IN ('pending_verification', 'verifying', 'issuing', 'active', 'failed'))`);
  // What the domain worker looks for on each pass: work that is due, by status.
  await knex.raw('CREATE INDEX agent_domains_due ON agent_domains (status, next_attempt_at)');

  await knex.schema.createTable('acme_accounts', (t) => {
    // One account per CA: a changed ACME_DIRECTORY_URL registers anew rather than reusing a key another CA knows.
    t.text('directory_url').primary();
    t.text('account_url').nullable();
    t.text('key_sealed').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('acme_accounts');
  await knex.schema.dropTableIfExists('agent_domains');
}
