import type { Knex } from 'knex';

/**
 * Teams (issue 39): a user may belong to several accounts, with a role in each.
 * `account_members` holds every membership, backfilled from `users` (one each until now);
 * `users.account_id` stays as the user's default account (the one a request acts in
 * without X-Account-Id) and `users.role` goes: a role belongs to a membership, and one
 * place keeps it. Invites made in the API name the invited email, expire and can be
 * revoked; the operator's codes (`npm run admin -- invite create`) keep a null email and
 * never expire, as before.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('account_members', (t) => {
    t.text('account_id').notNullable().references('accounts.id').onDelete('CASCADE');
    t.text('user_id').notNullable().references('users.id').onDelete('CASCADE').index();
    t.text('role').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.primary(['account_id', 'user_id']);
  });
  await knex.raw("ALTER TABLE account_members ADD CONSTRAINT account_members_role_check CHECK (role IN ('owner','admin','member','viewer'))");
  await knex.raw('INSERT INTO account_members (account_id, user_id, role, created_at) SELECT account_id, id, role, created_at FROM users');
  await knex.schema.alterTable('users', (t) => t.dropColumn('role'));

  await knex.schema.alterTable('invites', (t) => {
    t.text('email').nullable();
    t.timestamp('expires_at', { useTz: true }).nullable();
    t.timestamp('revoked_at', { useTz: true }).nullable();
    t.text('created_by').nullable();
    t.index(['account_id', 'created_at']);
  });
}

/** Each user keeps the role of their default account; other memberships and API invites' fields are lost. */
export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('invites', (t) => {
    t.dropIndex(['account_id', 'created_at']);
    t.dropColumns('email', 'expires_at', 'revoked_at', 'created_by');
  });
  await knex.schema.alterTable('users', (t) => t.text('role').nullable());
  await knex.raw('UPDATE users SET role = m.role FROM account_members m WHERE m.user_id = users.id AND m.account_id = users.account_id');
  await knex.raw("UPDATE users SET role = 'member' WHERE role IS NULL");
  await knex.raw('ALTER TABLE users ALTER COLUMN role SET NOT NULL');
  await knex.raw("ALTER TABLE users ADD CONSTRAINT users_role_check CHECK (role IN ('owner','admin','member','viewer'))");
  await knex.schema.dropTable('account_members');
}
