import type { Knex } from 'knex';
import type { Clock } from '../../contract/clock.js';
import type { AuditContext } from '../domain/audit.js';
import { notFound, PlatformError } from '../domain/errors.js';
import { ID_PREFIX, newId, newSecret, previewOf, SECRET_PREFIX, sha256Hex } from '../crypto/tokens.js';
import { inTransaction, repositoriesOn, type Repositories } from '../repositories/index.js';
import type { KeyView } from '../schemas/keys.js';
import { recordAudit } from './audit-log.js';
import { keyView } from './key-presenter.js';
import type { Principal } from './principal.js';
import { credentialKey, type AccessEnds } from './open-streams.js';

/** Personal API keys (agnt_…): a user's long-lived credential for scripts and CI. */
export class ApiKeyService {
  constructor(
    private readonly db: Knex,
    private readonly clock: Clock,
    /** Told of a revoked key: the streams it opened end. */
    private readonly streams?: AccessEnds,
  ) {}

  async create(principal: Principal, audit: AuditContext, label: string): Promise<KeyView & { key: string }> {
    assertConsoleSession(principal);
    const key = newSecret(SECRET_PREFIX.apiKey);
    const row = {
      id: newId(ID_PREFIX.apiKey),
      user_id: principal.userId,
      label,
      key_hash: sha256Hex(key),
      key_preview: previewOf(key, SECRET_PREFIX.apiKey),
      created_at: this.clock.now(),
    };
    await inTransaction(this.db, async (repos) => {
      // The key signs in as its creating session did (SSO or a password), for accounts that require SSO.
      const createdBy = await repos.sso.methodOf(principal);
      // The user was deleted while this request ran: their session is gone with them.
      if (!createdBy || !(await repos.apiKeys.insert({ ...row, created_by_method: createdBy }))) throw new PlatformError('AUTHENTICATION_FAILED');
      await this.recordKeyChange(repos, audit, principal, 'api_key.create', row.id, { label });
    });
    return { ...keyView(row), key };
  }

  async list(principal: Principal): Promise<KeyView[]> {
    assertConsoleSession(principal);
    return (await repositoriesOn(this.db).apiKeys.listForUser(principal.userId)).map(keyView);
  }

  async revoke(principal: Principal, audit: AuditContext, id: string): Promise<void> {
    assertConsoleSession(principal);
    await inTransaction(this.db, async (repos) => {
      if (!(await repos.apiKeys.delete(principal.userId, id))) throw notFound('API key');
      await this.recordKeyChange(repos, audit, principal, 'api_key.revoke', id);
    });
    this.streams?.announce({ scope: 'credential', id: credentialKey.apiKey(id), reason: 'key_revoked' });
  }

  private recordKeyChange(repos: Repositories, audit: AuditContext, principal: Principal, action: 'api_key.create' | 'api_key.revoke', keyId: string, details?: { label: string }): Promise<void> {
    return recordAudit(repos, audit, { accountId: principal.accountId, at: this.clock.now(), action, target: { type: 'api_key', id: keyId }, details });
  }
}

/** A leaked API key must not be able to mint more keys or hide itself. */
function assertConsoleSession(principal: Principal): void {
  if (principal.via !== 'session') {
    throw new PlatformError('AUTHORISATION_DENIED', 'Personal API keys are managed with a console session token, not an API key');
  }
}
