import type { Knex } from 'knex';
import type { Clock } from '../../contract/clock.js';
import type { SecretBox } from '../crypto/secret-box.js';
import { ID_PREFIX, newId } from '../crypto/tokens.js';
import { ANY_ORCHESTRATOR, DEFAULT_DEPLOY, resolveDeploy, runtimeLabels, type DeployRules } from '../domain/deploy.js';
import { DEFAULT_MODEL, providerOf } from '../domain/models.js';
import { limitsOf } from '../domain/plans.js';
import { slugFor } from '../domain/slug.js';
import { notFound, PlatformError, validationError } from '../domain/errors.js';
import type { AgentRow } from '../domain/agent.js';
import type { AuditContext } from '../domain/audit.js';
import { inTransaction, repositoriesOn, type Repositories } from '../repositories/index.js';
import type { Agent, CreateAgentBody, ListAgentsQuery, PatchAgentBody } from '../schemas/agents.js';
import type { AccessKeyService } from './access-key-service.js';
import type { AgentRunner } from './agent-runner.js';
import type { DeploymentRecorder } from './deployment-recorder.js';
import type { EdgeSync } from './edge-sync.js';
import { agentView, type PresenterSettings } from './agent-presenter.js';
import { pageEnvelope, pageWindow, type PageEnvelope } from './paging.js';
import type { Principal } from './principal.js';
import type { AccessEnds } from './open-streams.js';
import { assertWithinLimits } from './quota.js';
import { recordAudit } from './audit-log.js';
import { fromTo } from './audit-details.js';
import type { WebhookEvents } from './webhook-events.js';

export interface AgentPage extends PageEnvelope {
  agents: Agent[];
}

/** What an AgentService works with. */
export interface AgentServiceParts {
  db: Knex;
  clock: Clock;
  box: SecretBox;
  /** Issues a private agent's first access key, in the create's transaction. */
  accessKeys: AccessKeyService;
  presenter: PresenterSettings;
  /** Takes a deploying create's first job and a deleted agent's removal, after the commit. */
  runner: AgentRunner;
  edge: EdgeSync;
  recorder: DeploymentRecorder;
  /** Told of a deleted agent (agent.deleted), in the transaction that deletes it. */
  events?: WebhookEvents;
  /** Told of a deleted agent: its streams end. */
  streams?: AccessEnds;
  /** What the orchestrator in use can deliver (registry credentials' kinds). */
  deployRules?: DeployRules;
}

export class AgentService {
  constructor(private readonly parts: AgentServiceParts) {}

  /**
   * Creates the agent and, for a private one, its first access key, in one transaction
   * under the account's lock, so parallel creates cannot pass the plan's limits.
   */
  async create(principal: Principal, audit: AuditContext, input: CreateAgentBody): Promise<Agent> {
    if (input.build_path !== undefined || input.deploy?.build_path !== undefined) {
      throw new PlatformError('BUILD_NOT_SUPPORTED');
    }
    const model = input.model ?? DEFAULT_MODEL;
    const provider = providerOf(model);
    if (!provider) {
      throw validationError([{ loc: ['body', 'model'], msg: `unknown model family "${model}": use gpt-*, o1*, o3*, o4*, chatgpt-*, claude-* or gemini-*`, type: 'value_error' }]);
    }
    const deploy = resolveDeploy(input.deploy, DEFAULT_DEPLOY, this.parts.box, this.parts.deployRules ?? ANY_ORCHESTRATOR);
    const deploying = input.deploy !== undefined;
    const now = this.parts.clock.now();
    const row: AgentRow = {
      id: newId(ID_PREFIX.agent),
      account_id: principal.accountId,
      name: input.name,
      slug: slugFor(input.name),
      canary: null,
      ...runtimeLabels(deploy),
      model,
      provider,
      status: deploying ? 'pending' : 'stopped',
      access: input.access ?? 'private',
      rate_limit_rpm: input.rate_limit_rpm ?? null,
      replicas: 0,
      desired_replicas: deploying ? deploy.replicas : 0,
      parked_at: null,
      warm_parked_until: null,
      deployed_version: deploying ? 1 : null,
      deploy,
      api_key_sealed: input.api_key ? this.parts.box.seal(input.api_key) : null,
      system_prompt: input.system_prompt ?? null,
      tags: input.tags ?? [],
      metadata: input.metadata ?? {},
      error: null,
      version: 1,
      created_at: now,
      updated_at: now,
    };

    const created = await inTransaction(this.parts.db, async (repos) => {
      await this.lockAccountAndCheck(repos, principal.accountId, {
        agents: 1,
        replicas: row.desired_replicas,
        replicaCpu: deploy.resources.cpu,
        replicaMemoryMb: deploy.resources.memory_mb,
      });
      await repos.agents.insert(row);
      if (deploying) await this.parts.recorder.record(repos, row, { createdBy: principal.userId, rollbackOf: null });
      const firstKey = row.access === 'private' ? await this.parts.accessKeys.issue(repos, row.id, 'default') : null;
      await this.parts.edge.putAgent(repos, row);
      await recordAudit(repos, audit, {
        accountId: row.account_id,
        at: now,
        action: 'agent.create',
        target: { type: 'agent', id: row.id },
        agentId: row.id,
        details: { name: row.name, access: row.access, deployed: deploying },
      });
      return agentView(row, this.parts.presenter, firstKey?.key ?? null);
    });
    // The orchestrator's work (a pull may take minutes) happens after the answer.
    if (deploying) this.parts.runner.request('run', row);
    return created;
  }

  async list(principal: Principal, query: ListAgentsQuery): Promise<AgentPage> {
    const window = pageWindow(query);
    const { rows, total } = await repositoriesOn(this.parts.db).agents.list(
      principal.accountId,
      { status: query.status, tag: query.tag },
      window.offset,
      window.pageSize,
    );
    return { agents: rows.map((row) => agentView(row, this.parts.presenter)), ...pageEnvelope(window, total) };
  }

  async get(principal: Principal, id: string): Promise<Agent> {
    return agentView(await this.find(repositoriesOn(this.parts.db), principal, id), this.parts.presenter);
  }

  /** Changes access settings; a body that changes nothing leaves the version alone. */
  async patch(principal: Principal, audit: AuditContext, id: string, input: PatchAgentBody, expectedVersion?: number): Promise<Agent> {
    return inTransaction(this.parts.db, async (repos) => {
      const current = await this.findForUpdate(repos, principal, id, expectedVersion);
      const changes: Partial<AgentRow> = {};
      if (input.access !== undefined && input.access !== current.access) changes.access = input.access;
      if (input.rate_limit_rpm !== undefined && input.rate_limit_rpm !== current.rate_limit_rpm) {
        changes.rate_limit_rpm = input.rate_limit_rpm;
      }
      if (Object.keys(changes).length === 0) return agentView(current, this.parts.presenter);
      const now = this.parts.clock.now();
      const updated = (await repos.agents.update(principal.accountId, id, changes, now))!;
      await this.parts.edge.putAgent(repos, updated);
      await recordAudit(repos, audit, {
        accountId: updated.account_id,
        at: now,
        action: 'agent.update',
        target: { type: 'agent', id },
        agentId: id,
        details: {
          changed: Object.keys(changes).sort(),
          ...(changes.access === undefined ? {} : fromTo('access', current.access, updated.access)),
          ...(changes.rate_limit_rpm === undefined ? {} : fromTo('rate_limit_rpm', current.rate_limit_rpm, updated.rate_limit_rpm)),
        },
      });
      return agentView(updated, this.parts.presenter);
    });
  }

  /**
   * The row and the edge's route go first and the answer does not wait for the containers:
   * they are removed by a queued step, or, if the control API dies before it runs, by the
   * next reconcile, which removes every job Postgres no longer holds.
   */
  async delete(principal: Principal, audit: AuditContext, id: string, expectedVersion?: number): Promise<void> {
    const agent = await inTransaction(this.parts.db, async (repos) => {
      const current = await this.findForUpdate(repos, principal, id, expectedVersion);
      // Read before the delete cascades to them: their hostnames leave the edge with the agent.
      const domains = await repos.domains.listByAgent(id);
      await repos.agents.delete(principal.accountId, id);
      await recordAudit(repos, audit, {
        accountId: current.account_id,
        at: this.parts.clock.now(),
        action: 'agent.delete',
        target: { type: 'agent', id },
        agentId: id,
        details: { name: current.name },
      });
      await this.parts.events?.record(repos, 'agent.deleted', current);
      await this.parts.edge.write(async (projection) => {
        await projection.removeAgent(current.slug);
        for (const domain of domains) await projection.removeDomain(current.slug, domain.hostname);
      });
      return current;
    });
    this.parts.streams?.announce({ scope: 'agent', id, reason: 'agent_deleted' });
    this.parts.runner.request('remove', agent);
  }

  /** Another account's agent is answered exactly like a missing one. */
  async find(repos: Repositories, principal: Principal, id: string): Promise<AgentRow> {
    const row = await repos.agents.find(principal.accountId, id);
    if (!row) throw notFound('Agent');
    return row;
  }

  private async findForUpdate(repos: Repositories, principal: Principal, id: string, expectedVersion?: number): Promise<AgentRow> {
    const row = await repos.agents.findForUpdate(principal.accountId, id);
    if (!row) throw notFound('Agent');
    if (expectedVersion !== undefined && row.version !== expectedVersion) {
      throw new PlatformError('PRECONDITION_FAILED', `Agent is at version ${row.version}, not ${expectedVersion}`, {
        current_version: row.version,
      });
    }
    return row;
  }

  private async lockAccountAndCheck(
    repos: Repositories,
    accountId: string,
    change: Parameters<typeof assertWithinLimits>[2],
  ): Promise<void> {
    const account = await repos.accounts.lock(accountId);
    if (!account) throw notFound('Account');
    if (account.exempt) return;
    assertWithinLimits(limitsOf(account.plan), await repos.agents.footprint(accountId), change);
  }
}
