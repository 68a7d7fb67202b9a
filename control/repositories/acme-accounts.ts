import type { Knex } from 'knex';

/** The platform's account at one ACME CA (migration 008): its key sealed with the master keys. */
export interface AcmeAccountRow {
  directory_url: string;
  account_url: string | null;
  key_sealed: string;
  created_at: Date;
}

export class AcmeAccountRepository {
  constructor(private readonly db: Knex) {}

  async find(directoryUrl: string): Promise<AcmeAccountRow | undefined> {
    return this.db<AcmeAccountRow>('acme_accounts').where({ directory_url: directoryUrl }).first();
  }

  /** Keeps the first key stored for a CA: of two copies creating an account at once, both then use that one. */
  async insertIfAbsent(row: AcmeAccountRow): Promise<void> {
    await this.db('acme_accounts').insert(row).onConflict('directory_url').ignore();
  }

  async setAccountUrl(directoryUrl: string, accountUrl: string): Promise<void> {
    await this.db('acme_accounts').where({ directory_url: directoryUrl }).update({ account_url: accountUrl });
  }
}
