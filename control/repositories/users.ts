import type { Knex } from 'knex';
import type { Role } from '../domain/roles.js';

export interface UserRow {
  id: string;
  account_id: string;
  email: string;
  name: string;
  password_hash: string;
  role: Role;
  created_at: Date;
}

export class UserRepository {
  constructor(private readonly db: Knex) {}

  async insert(row: UserRow): Promise<void> {
    await this.db('users').insert(row);
  }

  async find(id: string): Promise<UserRow | undefined> {
    return this.db<UserRow>('users').where({ id }).first();
  }

  async findByEmail(email: string): Promise<UserRow | undefined> {
    return this.db<UserRow>('users').whereRaw('lower(email) = lower(?)', [email]).first();
  }

  /** The account's users, oldest first. */
  async ofAccount(accountId: string): Promise<UserRow[]> {
    return this.db<UserRow>('users').where({ account_id: accountId }).orderBy([{ column: 'created_at' }, { column: 'id' }]);
  }

  async countOwners(accountId: string): Promise<number> {
    const row = await this.db('users').where({ account_id: accountId, role: 'owner' }).count({ count: '*' }).first();
    return Number(row?.count ?? 0);
  }

  /** Removes the user; their sessions and personal API keys go with them (ON DELETE CASCADE, migration 001). */
  async delete(accountId: string, id: string): Promise<boolean> {
    return (await this.db('users').where({ account_id: accountId, id }).delete()) > 0;
  }

  async setRole(id: string, role: Role): Promise<boolean> {
    return (await this.db('users').where({ id }).update({ role })) > 0;
  }
}
