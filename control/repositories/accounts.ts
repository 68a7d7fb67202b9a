import type { Knex } from 'knex';

export interface AccountRow {
  id: string;
  plan: string;
  exempt: boolean;
  created_at: Date;
}

export class AccountRepository {
  constructor(private readonly db: Knex) {}

  async insert(row: AccountRow): Promise<void> {
    await this.db('accounts').insert(row);
  }

  async find(id: string): Promise<AccountRow | undefined> {
    return this.db<AccountRow>('accounts').where({ id }).first();
  }

  /** Takes the account's row lock: changes that count against its quotas queue behind it. */
  async lock(id: string): Promise<AccountRow | undefined> {
    return this.db<AccountRow>('accounts').where({ id }).forUpdate().first();
  }

  /**
   * Removes the account and, through ON DELETE CASCADE (migrations 001, 003, 004), its
   * users, their sessions and API keys, invites, agents, access keys, deployments and
   * usage records.
   */
  async delete(id: string): Promise<boolean> {
    return (await this.db('accounts').where({ id }).delete()) > 0;
  }

  async update(id: string, changes: Partial<Pick<AccountRow, 'plan' | 'exempt'>>): Promise<boolean> {
    return (await this.db('accounts').where({ id }).update(changes)) > 0;
  }
}
