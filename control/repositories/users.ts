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

  async setRole(id: string, role: Role): Promise<boolean> {
    return (await this.db('users').where({ id }).update({ role })) > 0;
  }
}
