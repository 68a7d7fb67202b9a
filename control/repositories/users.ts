import type { Knex } from 'knex';
import type { Role } from '../domain/roles.js';

/**
 * A user as read with one membership: `account_id` and `role` are those of the account it
 * was read for (the default account, `users.account_id`, unless a query names another).
 */
export interface UserRow {
  id: string;
  account_id: string;
  email: string;
  name: string;
  password_hash: string;
  role: Role;
  created_at: Date;
}

/** The user's columns with the role of their default account (migration 013 keeps roles on memberships only). */
export function withDefaultRole(query: Knex.QueryBuilder): Knex.QueryBuilder {
  return query
    .join('account_members as default_membership', (on) => {
      on.on('default_membership.user_id', '=', 'users.id').andOn('default_membership.account_id', '=', 'users.account_id');
    })
    .select('users.*', 'default_membership.role');
}

export class UserRepository {
  constructor(private readonly db: Knex) {}

  /**
   * Creates the user with their membership of `row.account_id` (their default account) as
   * `row.role`, in one statement, so no user exists without a membership whatever
   * transaction the caller is in (registration, an accepted invite, an SSO sign-up).
   */
  async insert(row: UserRow): Promise<void> {
    const { role, ...user } = row;
    const inserted = this.db('users').insert(user).returning(['id', 'account_id', 'created_at']);
    await this.db.raw('WITH inserted AS (?) INSERT INTO account_members (account_id, user_id, role, created_at) SELECT account_id, id, ?, created_at FROM inserted', [inserted, role]);
  }

  async find(id: string): Promise<UserRow | undefined> {
    return withDefaultRole(this.db('users')).where('users.id', id).first();
  }

  async findByEmail(email: string): Promise<UserRow | undefined> {
    return withDefaultRole(this.db('users')).whereRaw('lower(users.email) = lower(?)', [email]).first();
  }

  /** The account's members, oldest membership first, each with their role and `account_id` in this account. */
  async ofAccount(accountId: string): Promise<UserRow[]> {
    return this.db('users')
      .join('account_members', 'account_members.user_id', 'users.id')
      .where('account_members.account_id', accountId)
      .orderBy([{ column: 'account_members.created_at' }, { column: 'users.id' }])
      .select('users.*', 'account_members.account_id', 'account_members.role');
  }

  /** The member of `accountId` by user id or (case-insensitively) email, as `ofAccount` shows them. */
  async findMember(accountId: string, ref: { id: string } | { email: string }): Promise<UserRow | undefined> {
    const query = this.db('users')
      .join('account_members', 'account_members.user_id', 'users.id')
      .where('account_members.account_id', accountId)
      .select('users.*', 'account_members.account_id', 'account_members.role');
    return ('id' in ref ? query.where('users.id', ref.id) : query.whereRaw('lower(users.email) = lower(?)', [ref.email])).first();
  }

  /** Removes the user; their memberships, sessions and personal API keys go with them (ON DELETE CASCADE, migrations 001 and 013). */
  async delete(id: string): Promise<boolean> {
    return (await this.db('users').where({ id }).delete()) > 0;
  }

  /** Makes `to` the account the user's requests act in without X-Account-Id, if it was `from`. */
  async moveDefault(id: string, from: string, to: string): Promise<void> {
    await this.db('users').where({ id, account_id: from }).update({ account_id: to });
  }

  /**
   * Moves the users whose default account is `accountId` and who belong to another to their
   * oldest other membership, so deleting the account (which cascades to the users whose
   * default it is) deletes only those who belong to it alone.
   */
  async moveDefaultsOff(accountId: string): Promise<void> {
    await this.db.raw(
      `UPDATE users SET account_id = other.account_id
         FROM (SELECT DISTINCT ON (user_id) user_id, account_id FROM account_members
                WHERE account_id <> ? ORDER BY user_id, created_at, account_id) other
        WHERE users.id = other.user_id AND users.account_id = ?`,
      [accountId, accountId],
    );
  }
}
