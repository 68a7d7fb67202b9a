import type { Knex } from 'knex';
import type { Clock } from '../../contract/clock.js';
import { ID_PREFIX, newId, newSecret, previewOf, SECRET_PREFIX, sha256Hex } from '../crypto/tokens.js';
import { notFound } from '../domain/errors.js';
import { inTransaction, repositoriesOn, type Repositories } from '../repositories/index.js';
import type { KeyView } from '../schemas/keys.js';
import { keyView } from './key-presenter.js';
import type { Principal } from './principal.js';
import type { EdgeSync } from './edge-sync.js';
import type { AgentRow } from '../domain/agent.js';
import type { AuditContext } from '../domain/audit.js';
import { recordAudit } from './audit-log.js';

export type IssuedKey = KeyView & { key: string };

/** Access keys (agk_…) of one agent: what callers of a private agent present at the edge. */
export class AccessKeyService {
  constructor(private readonly db: Knex, private readonly clock: Clock, private readonly edge: EdgeSync) {}

  async create(principal: Principal, audit: AuditContext, agentId: string, label: string): Promise<IssuedKey> {
    return inTransaction(this.db, async (repos) => {
      await this.lockAgentOf(repos, principal, agentId);
      const issued = await this.issue(repos, agentId, label);
      await this.recordKeyChange(repos, audit, principal, 'access_key.create', agentId, issued.id, { label });
      return issued;
    });
  }

  async list(principal: Principal, agentId: string): Promise<KeyView[]> {
    const repos = repositoriesOn(this.db);
    await this.assertAgentOf(repos, principal, agentId);
    return (await repos.accessKeys.listForAgent(agentId)).map(keyView);
  }

  async revoke(principal: Principal, audit: AuditContext, agentId: string, keyId: string): Promise<void> {
    // The hash leaves Redis before Postgres commits: once the 204 is sent, the key is refused.
    await inTransaction(this.db, async (repos) => {
      const agent = await this.lockAgentOf(repos, principal, agentId);
      const keyHash = await repos.accessKeys.delete(agentId, keyId);
      if (!keyHash) throw notFound('Access key');
      await this.recordKeyChange(repos, audit, principal, 'access_key.revoke', agentId, keyId);
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

  /** An access key's event carries its agent, so the log's agent_id filter finds it. */
  private recordKeyChange(repos: Repositories, audit: AuditContext, principal: Principal, action: 'access_key.create' | 'access_key.revoke', agentId: string, keyId: string, details?: { label: string }): Promise<void> {
    return recordAudit(repos, audit, { accountId: principal.accountId, at: this.clock.now(), action, target: { type: 'access_key', id: keyId }, agentId, details });
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
