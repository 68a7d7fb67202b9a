import type { Knex } from 'knex';
import type { Clock } from '../clock.js';
import { ID_PREFIX, newId, newSecret, previewOf, SECRET_PREFIX, sha256Hex } from '../crypto/tokens.js';
import { notFound } from '../errors.js';
import { inTransaction, repositoriesOn, type Repositories } from '../repositories/index.js';
import type { KeyView } from '../schemas/keys.js';
import { keyView } from './key-presenter.js';
import type { Principal } from './principal.js';

export type IssuedKey = KeyView & { key: string };

/** Access keys (agk_…) of one agent: what callers of a private agent present at the edge. */
export class AccessKeyService {
  constructor(private readonly db: Knex, private readonly clock: Clock) {}

  async create(principal: Principal, agentId: string, label: string): Promise<IssuedKey> {
    return inTransaction(this.db, async (repos) => {
      await this.assertAgentOf(repos, principal, agentId);
      return this.issue(repos, agentId, label);
    });
  }

  async list(principal: Principal, agentId: string): Promise<KeyView[]> {
    const repos = repositoriesOn(this.db);
    await this.assertAgentOf(repos, principal, agentId);
    return (await repos.accessKeys.listForAgent(agentId)).map(keyView);
  }

  async revoke(principal: Principal, agentId: string, keyId: string): Promise<void> {
    await inTransaction(this.db, async (repos) => {
      await this.assertAgentOf(repos, principal, agentId);
      if (!(await repos.accessKeys.delete(agentId, keyId))) throw notFound('Access key');
    });
  }

  /** Mints a key inside the caller's transaction; only its SHA-256 is stored. */
  async issue(repos: Repositories, agentId: string, label: string): Promise<IssuedKey> {
    const key = newSecret(SECRET_PREFIX.accessKey);
    const row = {
      id: newId(ID_PREFIX.accessKey),
      agent_id: agentId,
      label,
      key_hash: sha256Hex(key),
      key_preview: previewOf(key, SECRET_PREFIX.accessKey),
      created_at: this.clock.now(),
    };
    await repos.accessKeys.insert(row);
    return { ...keyView(row), key };
  }

  private async assertAgentOf(repos: Repositories, principal: Principal, agentId: string): Promise<void> {
    if (!(await repos.agents.find(principal.accountId, agentId))) throw notFound('Agent');
  }
}
