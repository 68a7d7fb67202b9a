import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('accounts', (t) => {
    t.text('id').primary();
    t.text('plan').notNullable().defaultTo('free');
    t.boolean('exempt').notNullable().defaultTo(false);
    t.timestamp('created_at', { useTz: true }).notNullable();
  });

  await knex.schema.createTable('users', (t) => {
    t.text('id').primary();
    t.text('account_id').notNullable().references('accounts.id').onDelete('CASCADE');
    t.text('email').notNullable();
    t.text('name').notNullable();
    t.text('password_hash').notNullable();
    t.text('role').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable();
  });
  // Emails are compared case-insensitively: Ann@x.io and ann@x.io are one person.
  await knex.raw('CREATE UNIQUE INDEX users_email_unique ON users (lower(email))');
  await knex.raw("ALTER TABLE users ADD CONSTRAINT users_role_check CHECK (role IN ('owner','admin','member','viewer'))");

  await knex.schema.createTable('sessions', (t) => {
    t.text('token_hash').primary();
    t.text('user_id').notNullable().references('users.id').onDelete('CASCADE');
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.timestamp('expires_at', { useTz: true }).notNullable().index();
  });

  await knex.schema.createTable('api_keys', (t) => {
    t.text('id').primary();
    t.text('user_id').notNullable().references('users.id').onDelete('CASCADE').index();
    t.text('label').notNullable();
    t.text('key_hash').notNullable().unique();
    t.text('key_preview').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable();
  });

  await knex.schema.createTable('invites', (t) => {
    t.text('id').primary();
    t.text('code_hash').notNullable().unique();
    // An invite either opens a new account (null) or joins an existing one with a role.
    t.text('account_id').nullable().references('accounts.id').onDelete('CASCADE');
    t.text('role').nullable();
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.timestamp('used_at', { useTz: true }).nullable();
    t.text('used_by').nullable();
  });

  await knex.schema.createTable('agents', (t) => {
    t.text('id').primary();
    t.text('account_id').notNullable().references('accounts.id').onDelete('CASCADE');
    t.text('name').notNullable();
    t.text('slug').notNullable().unique();
    t.text('runtime').notNullable();
    t.text('framework').notNullable();
    t.text('model').notNullable();
    t.text('provider').notNullable();
    t.text('status').notNullable();
    t.text('access').notNullable();
    t.integer('rate_limit_rpm').nullable();
    t.integer('replicas').notNullable().defaultTo(0);
    // Replicas the account has asked for; quotas are counted on these, not on what runs yet.
    t.integer('desired_replicas').notNullable().defaultTo(0);
    t.jsonb('deploy').notNullable();
    t.text('api_key_sealed').nullable();
    t.text('system_prompt').nullable();
    t.specificType('tags', 'text[]').notNullable().defaultTo('{}');
    t.jsonb('metadata').notNullable().defaultTo('{}');
    t.text('error').nullable();
    t.integer('version').notNullable().defaultTo(1);
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.timestamp('updated_at', { useTz: true }).notNullable();
  });
  await knex.raw('CREATE INDEX agents_account_created ON agents (account_id, created_at DESC, id DESC)');
  await knex.raw('CREATE INDEX agents_tags ON agents USING gin (tags)');
  await knex.raw(
    "ALTER TABLE agents ADD CONSTRAINT agents_status_check CHECK (status IN ('pending','starting','running','scaling','stopped','failed','crashed'))",
  );
  await knex.raw("ALTER TABLE agents ADD CONSTRAINT agents_access_check CHECK (access IN ('public','private'))");

  await knex.schema.createTable('access_keys', (t) => {
    t.text('id').primary();
    t.text('agent_id').notNullable().references('agents.id').onDelete('CASCADE').index();
    t.text('label').notNullable();
    t.text('key_hash').notNullable().unique();
    t.text('key_preview').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  for (const table of ['access_keys', 'agents', 'invites', 'api_keys', 'sessions', 'users', 'accounts']) {
    await knex.schema.dropTableIfExists(table);
  }
}
