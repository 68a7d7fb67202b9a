import type { Knex } from 'knex';
import type { SignInMethod, SsoRole } from '../domain/sso.js';

/** An account's OpenID Connect provider; the client secret only ever sealed. */
export interface AccountSsoRow {
  account_id: string;
  slug: string;
  issuer_url: string;
  client_id: string;
  client_secret_sealed: string;
  allowed_email_domains: string[];
  default_role: SsoRole;
  required: boolean;
  updated_at: Date;
}

/** A sign-in between the redirect to the provider and its callback, keyed by its state's hash. */
export interface SsoLoginRow {
  state_hash: string;
  account_id: string;
  code_verifier: string;
  nonce: string;
  return_to: string | null;
  expires_at: Date;
}

/** The one-time code a callback hands over, by its hash, for POST /auth/sso/exchange. */
export interface SsoHandoffRow {
  code_hash: string;
  user_id: string;
  expires_at: Date;
}

/** Postgres's unique_violation (Appendix A, Error Codes). */
const UNIQUE_VIOLATION = '23505';

export class SsoRepository {
  constructor(private readonly db: Knex) {}

  async find(accountId: string): Promise<AccountSsoRow | undefined> {
    return this.db<AccountSsoRow>('account_sso').where({ account_id: accountId }).first();
  }

  async findBySlug(slug: string): Promise<AccountSsoRow | undefined> {
    return this.db<AccountSsoRow>('account_sso').where({ slug }).first();
  }

  /** False when another account holds the slug. */
  async upsert(row: AccountSsoRow): Promise<boolean> {
    try {
      await this.db('account_sso').insert(row).onConflict('account_id').merge();
      return true;
    } catch (error) {
      if ((error as { code?: string; constraint?: string }).code === UNIQUE_VIOLATION) return false;
      throw error;
    }
  }

  async delete(accountId: string): Promise<boolean> {
    return (await this.db('account_sso').where({ account_id: accountId }).delete()) > 0;
  }

  /** Whether the account refuses credentials that did not come from SSO (no row: it does not). */
  async requiresSso(accountId: string): Promise<boolean> {
    const row = await this.db('account_sso').where({ account_id: accountId }).first('required');
    return row?.required ?? false;
  }

  /** How the credential's user signed in: a session's own method, or that of the session that created the API key. */
  async methodOf(credential: { sessionHash?: string; apiKeyId?: string }): Promise<SignInMethod | undefined> {
    if (credential.sessionHash) return (await this.db('sessions').where({ token_hash: credential.sessionHash }).first('method'))?.method;
    if (credential.apiKeyId) return (await this.db('api_keys').where({ id: credential.apiKeyId }).first('created_by_method'))?.created_by_method;
    return undefined;
  }

  /** Starts a sign-in; sign-ins abandoned at the provider are swept here, the table's only writer. */
  async insertLogin(row: SsoLoginRow, now: Date): Promise<void> {
    await this.db('sso_logins').where('expires_at', '<=', now).delete();
    await this.db('sso_logins').insert(row);
  }

  /** Takes a sign-in once: a replayed or expired state finds nothing. */
  async takeLogin(stateHash: string, now: Date): Promise<SsoLoginRow | undefined> {
    const [row] = await this.db<SsoLoginRow>('sso_logins').where({ state_hash: stateHash }).andWhere('expires_at', '>', now).delete('*');
    return row;
  }

  async insertHandoff(row: SsoHandoffRow, now: Date): Promise<void> {
    await this.db('sso_handoffs').where('expires_at', '<=', now).delete();
    await this.db('sso_handoffs').insert(row);
  }

  async takeHandoff(codeHash: string, now: Date): Promise<SsoHandoffRow | undefined> {
    const [row] = await this.db<SsoHandoffRow>('sso_handoffs').where({ code_hash: codeHash }).andWhere('expires_at', '>', now).delete('*');
    return row;
  }
}
