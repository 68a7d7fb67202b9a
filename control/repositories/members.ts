import type { Knex } from 'knex';
import type { Role } from '../domain/roles.js';

export interface MemberRow {
  account_id: string;
  user_id: string;
  role: Role;
  created_at: Date;
}

/** Who belongs to which account, with which role (migration 013). */
export class MemberRepository {
  constructor(private readonly db: Knex) {}

  /** Adds the membership; false when the user already belongs to the account. */
  async insert(row: MemberRow): Promise<boolean> {
    const inserted = await this.db('account_members').insert(row).onConflict(['account_id', 'user_id']).ignore().returning('user_id');
    return inserted.length > 0;
  }

  async find(accountId: string, userId: string): Promise<MemberRow | undefined> {
    return this.db<MemberRow>('account_members').where({ account_id: accountId, user_id: userId }).first();
  }

  /** The user's memberships, oldest first. */
  async ofUser(userId: string): Promise<MemberRow[]> {
    return this.db<MemberRow>('account_members').where({ user_id: userId }).orderBy([{ column: 'created_at' }, { column: 'account_id' }]);
  }

  async countOwners(accountId: string): Promise<number> {
    const row = await this.db('account_members').where({ account_id: accountId, role: 'owner' }).count({ count: '*' }).first();
    return Number(row?.count ?? 0);
  }

  async setRole(accountId: string, userId: string, role: Role): Promise<boolean> {
    return (await this.db('account_members').where({ account_id: accountId, user_id: userId }).update({ role })) > 0;
  }

  async delete(accountId: string, userId: string): Promise<boolean> {
    return (await this.db('account_members').where({ account_id: accountId, user_id: userId }).delete()) > 0;
  }
}
