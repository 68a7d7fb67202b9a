import type { Knex } from 'knex';
import type { Clock } from '../../contract/clock.js';
import { ID_PREFIX, newId, newSecret, previewOf, SECRET_PREFIX, sha256Hex } from '../crypto/tokens.js';
import { notFound } from '../errors.js';
import { inTransaction, repositoriesOn, type Repositories } from '../repositories/index.js';
import type { KeyView } from '../schemas/keys.js';
import { keyView } from './key-presenter.js';
import type { Principal } from './principal.js';
import type { EdgeSync } from './edge-sync.js';
import type { AgentRow } from '../domain/agent.js';

export type IssuedKey = KeyView & { key: string };

/** Access keys (agk_…) of one agent: what callers of a private agent present at the edge. */
export class AccessKeyService {
  constructor(private readonly db: Knex, private readonly clock: Clock, private readonly edge: EdgeSync) {}

  async create(principal: Principal, agentId: string, label: string): Promise<IssuedKey> {
    return inTransaction(this.db, async (repos) => {
      await this.lockAgentOf(repos, principal, agentId);
      return this.issue(repos, agentId, label);
    });
  }

  async list(principal: Principal, agentId: string): Promise<KeyView[]> {
    const repos = repositoriesOn(this.db);
    await this.assertAgentOf(repos, principal, agentId);
    return (await repos.accessKeys.listForAgent(agentId)).map(keyView);
  }

  async revoke(principal: Principal, agentId: string, keyId: string): Promise<void> {
    // The hash leaves Redis before Postgres commits: once the 204 is sent, the key is refused.
    await inTransaction(this.db, async (repos) => {
      const agent = await this.lockAgentOf(repos, principal, agentId);
      const keyHash = await repos.accessKeys.delete(agentId, keyId);
      if (!keyHash) throw notFound('Access key');
      await this.edge.write((projection) => projection.removeKey(agent.slug, keyHash));
    });
  }

  /** Mints a key inside the caller's transaction; only its SHA-256 is stored, in Postgres and at the edge. */
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
    const agent = (await repos.agents.findAny(agentId))!;
    await this.edge.write((projection) => projection.addKey(agent.slug, row.key_hash));
    return { ...keyView(row), key };
  }

  private async assertAgentOf(repos: Repositories, principal: Principal, agentId: string): Promise<void> {
    if (!(await repos.agents.find(principal.accountId, agentId))) throw notFound('Agent');
  }

  /** Key changes lock the agent's row, so an edge rebuild never interleaves with them. */
  private async lockAgentOf(repos: Repositories, principal: Principal, agentId: string): Promise<AgentRow> {
    const agent = await repos.agents.findForUpdate(principal.accountId, agentId);
    if (!agent) throw notFound('Agent');
    return agent;
  }
}
