import type { Knex } from 'knex';
import type { SignInMethod } from '../domain/sso.js';
import { insertUnlessParentGone } from './parent-gone.js';
import { withDefaultRole, type UserRow } from './users.js';

export interface SessionRow {
  token_hash: string;
  user_id: string;
  created_at: Date;
  expires_at: Date;
  /** How the user signed in (migration 014); 'password' when not given. */
  method?: SignInMethod;
}

export class SessionRepository {
  constructor(private readonly db: Knex) {}

  /** False when the user is gone: deleted between the password check and this insert. */
  async insert(row: SessionRow): Promise<boolean> {
    return insertUnlessParentGone(this.db('sessions'), row);
  }

  /** The user of a session that is still valid at `now`. */
  async findLiveUser(tokenHash: string, now: Date): Promise<UserRow | undefined> {
    return withDefaultRole(this.db('users'))
      .join('sessions', 'sessions.user_id', 'users.id')
      .where('sessions.token_hash', tokenHash)
      .andWhere('sessions.expires_at', '>', now)
      .first();
  }

  /** Ends one session (sign-out): its token is refused from the next request on. */
  async delete(tokenHash: string): Promise<boolean> {
    return (await this.db('sessions').where({ token_hash: tokenHash }).delete()) > 0;
  }

  async deleteExpired(now: Date): Promise<number> {
    return this.db('sessions').where('expires_at', '<=', now).delete();
  }
}
