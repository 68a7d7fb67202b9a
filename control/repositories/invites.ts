import type { Knex } from 'knex';
import type { Role } from '../domain/roles.js';

/**
 * An invite: the operator's code (`npm run admin -- invite create`: no email, no expiry,
 * used by POST /auth/register) or an account's invite of one email (POST /account/invites:
 * accepted through its link, expires, can be revoked). Only the secret's hash is kept.
 */
export interface InviteRow {
  id: string;
  code_hash: string;
  account_id: string | null;
  role: Role | null;
  created_at: Date;
  used_at: Date | null;
  used_by: string | null;
  email?: string | null;
  expires_at?: Date | null;
  revoked_at?: Date | null;
  /** The user who invited; null for the operator's codes. */
  created_by?: string | null;
}

export class InviteRepository {
  constructor(private readonly db: Knex) {}

  async insert(row: InviteRow): Promise<void> {
    await this.db('invites').insert(row);
  }

  /**
   * Marks an unused operator code used and returns it; two registrations racing for one
   * code: one wins. An account's invite (with an email) is accepted only through its link.
   */
  async claim(codeHash: string, userId: string, now: Date): Promise<InviteRow | undefined> {
    const [row] = await this.db<InviteRow>('invites')
      .where({ code_hash: codeHash })
      .whereNull('used_at')
      .whereNull('email')
      .update({ used_at: now, used_by: userId }, '*');
    return row as InviteRow | undefined;
  }

  /** An account's invite by its secret's hash, whatever its state, locked until the transaction ends. */
  async lockByHash(codeHash: string): Promise<InviteRow | undefined> {
    return this.db<InviteRow>('invites').where({ code_hash: codeHash }).whereNotNull('email').whereNotNull('account_id').forUpdate().first();
  }

  async findByHash(codeHash: string): Promise<InviteRow | undefined> {
    return this.db<InviteRow>('invites').where({ code_hash: codeHash }).whereNotNull('email').whereNotNull('account_id').first();
  }

  async markUsed(id: string, userId: string, now: Date): Promise<void> {
    await this.db('invites').where({ id }).update({ used_at: now, used_by: userId });
  }

  /** The account's invites that can still be accepted, newest first. */
  async pending(accountId: string, now: Date): Promise<InviteRow[]> {
    return this.db<InviteRow>('invites')
      .where({ account_id: accountId })
      .whereNotNull('email')
      .whereNull('used_at')
      .whereNull('revoked_at')
      .andWhere('expires_at', '>', now)
      .orderBy([{ column: 'created_at', order: 'desc' }, { column: 'id', order: 'desc' }]);
  }

  /** Revokes a pending invite of the account; the revoked row, or undefined when there is none to revoke. */
  async revoke(accountId: string, id: string, now: Date): Promise<InviteRow | undefined> {
    const [row] = await this.db<InviteRow>('invites')
      .where({ account_id: accountId, id })
      .whereNotNull('email')
      .whereNull('used_at')
      .whereNull('revoked_at')
      .andWhere('expires_at', '>', now)
      .update({ revoked_at: now }, '*');
    return row as InviteRow | undefined;
  }
}
