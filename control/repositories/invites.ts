import type { Knex } from 'knex';
import type { Role } from '../domain/roles.js';

export interface InviteRow {
  id: string;
  code_hash: string;
  account_id: string | null;
  role: Role | null;
  created_at: Date;
  used_at: Date | null;
  used_by: string | null;
}

export class InviteRepository {
  constructor(private readonly db: Knex) {}

  async insert(row: InviteRow): Promise<void> {
    await this.db('invites').insert(row);
  }

  /** Marks an unused invite used and returns it; two registrations racing for one code: one wins. */
  async claim(codeHash: string, userId: string, now: Date): Promise<InviteRow | undefined> {
    const [row] = await this.db<InviteRow>('invites')
      .where({ code_hash: codeHash })
      .whereNull('used_at')
      .update({ used_at: now, used_by: userId }, '*');
    return row as InviteRow | undefined;
  }
}
