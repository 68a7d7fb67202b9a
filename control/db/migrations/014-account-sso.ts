import type { Knex } from 'knex';

/**
 * Single sign-on with OpenID Connect (issue 39).
 *
 * `account_sso`: an account's identity provider, at most one. `slug` is the account's public
 * SSO name (`/auth/sso/{slug}/start`); the client secret is sealed with the master keys and
 * re-sealed by key rotation (repositories/sealed-values.ts).
 *
 * `sso_logins`: a sign-in under way, from the redirect to the provider to its callback:
 * keyed by the SHA-256 of its `state`, deleted when used, good for 10 minutes.
 * `sso_handoffs`: the one-time code the callback hands the console or the CLI, which
 * POST /auth/sso/exchange trades for a session; good for one minute, deleted when used.
 * Both live in Postgres beside the sessions they lead to rather than in Redis: a single
 * `DELETE … RETURNING` makes each one-time, and a Redis outage does not break sign-in
 * (docs/decisions.md, "OpenID Connect with openid-client").
 *
 * `sessions.method` and `api_keys.created_by_method`: how a credential's user signed in,
 * so an account that requires SSO refuses credentials that came from a password.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('account_sso', (t) => {
    t.text('account_id').primary().references('accounts.id').onDelete('CASCADE');
    t.text('slug').notNullable().unique();
    t.text('issuer_url').notNullable();
    t.text('client_id').notNullable();
    t.text('client_secret_sealed').notNullable();
    t.specificType('allowed_email_domains', 'text[]').notNullable();
    t.text('default_role').notNullable();
    t.boolean('required').notNullable();
    t.timestamp('updated_at', { useTz: true }).notNullable();
  });
  await knex.raw("ALTER TABLE account_sso ADD CONSTRAINT account_sso_default_role_check CHECK (default_role IN ('admin','member','viewer'))");

  await knex.schema.createTable('sso_logins', (t) => {
    t.text('state_hash').primary();
    t.text('account_id').notNullable().references('accounts.id').onDelete('CASCADE');
    t.text('code_verifier').notNullable();
    t.text('nonce').notNullable();
    /** A CLI's loopback address; null for the console. */
    t.text('return_to').nullable();
    t.timestamp('expires_at', { useTz: true }).notNullable().index();
  });

  await knex.schema.createTable('sso_handoffs', (t) => {
    t.text('code_hash').primary();
    t.text('user_id').notNullable().references('users.id').onDelete('CASCADE');
    t.timestamp('expires_at', { useTz: true }).notNullable().index();
  });

  await knex.schema.alterTable('sessions', (t) => t.text('method').notNullable().defaultTo('password'));
  await knex.schema.alterTable('api_keys', (t) => t.text('created_by_method').notNullable().defaultTo('password'));
  await knex.raw("ALTER TABLE sessions ADD CONSTRAINT sessions_method_check CHECK (method IN ('password','sso'))");
  await knex.raw("ALTER TABLE api_keys ADD CONSTRAINT api_keys_created_by_method_check CHECK (created_by_method IN ('password','sso'))");
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('api_keys', (t) => t.dropColumn('created_by_method'));
  await knex.schema.alterTable('sessions', (t) => t.dropColumn('method'));
  await knex.schema.dropTable('sso_handoffs');
  await knex.schema.dropTable('sso_logins');
  await knex.schema.dropTable('account_sso');
}
