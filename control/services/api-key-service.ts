import type { Knex } from 'knex';
import type { Clock } from '../../contract/clock.js';
import { notFound, PlatformError } from '../errors.js';
import { ID_PREFIX, newId, newSecret, previewOf, SECRET_PREFIX, sha256Hex } from '../crypto/tokens.js';
import { repositoriesOn } from '../repositories/index.js';
import type { KeyView } from '../schemas/keys.js';
import { keyView } from './key-presenter.js';
import type { Principal } from './principal.js';

/** Personal API keys (agnt_…): a user's long-lived credential for scripts and CI. */
export class ApiKeyService {
  constructor(private readonly db: Knex, private readonly clock: Clock) {}

  async create(principal: Principal, label: string): Promise<KeyView & { key: string }> {
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
    // The user was deleted while this request ran: their session is gone with them.
    if (!(await repositoriesOn(this.db).apiKeys.insert(row))) throw new PlatformError('AUTHENTICATION_FAILED');
    return { ...keyView(row), key };
  }

  async list(principal: Principal): Promise<KeyView[]> {
    assertConsoleSession(principal);
    return (await repositoriesOn(this.db).apiKeys.listForUser(principal.userId)).map(keyView);
  }

  async revoke(principal: Principal, id: string): Promise<void> {
    assertConsoleSession(principal);
    if (!(await repositoriesOn(this.db).apiKeys.delete(principal.userId, id))) throw notFound('API key');
  }
}

/** A leaked API key must not be able to mint more keys or hide itself. */
function assertConsoleSession(principal: Principal): void {
  if (principal.via !== 'session') {
    throw new PlatformError('AUTHORISATION_DENIED', 'Personal API keys are managed with a console session token, not an API key');
  }
}
