import type { Knex } from 'knex';
import type { Clock } from '../../contract/clock.js';
import type { SecretBox } from '../crypto/secret-box.js';
import { ANY_ORCHESTRATOR, resolveDeploy, runtimeLabels, type DeployRules, type StoredDeploy } from '../domain/deploy.js';
import { limitsOf } from '../domain/plans.js';
import { isQuotaExceeded, notFound, PlatformError, validationError } from '../errors.js';
import type { AgentRow } from '../domain/agent.js';
import { SYSTEM_CONTEXT, type AuditContext, type AuditDetails } from '../domain/audit.js';
import { inTransaction, repositoriesOn, type Repositories } from '../repositories/index.js';
import type { Agent, DeployInput, ScaleBody, ScaleResult } from '../schemas/agents.js';
import type { RollbackBody } from '../schemas/deployments.js';
import { agentView, type PresenterSettings } from './agent-presenter.js';
import type { AgentRunner } from './agent-runner.js';
import type { DeploymentRecorder } from './deployment-recorder.js';
import type { Principal } from './principal.js';
import { assertWithinLimits, type FootprintChange } from './quota.js';
import { wakeable } from '../domain/scale-to-zero.js';
import type { EdgeSync } from './edge-sync.js';
import type { WebhookEvents } from './webhook-events.js';
import { recordAudit } from './audit-log.js';
import { deployChanges } from './audit-details.js';

/** What the plan's quota reported when it held a scale-out below what was asked. */
export interface QuotaDetails {
  limit: string;
  value: number;
  requested: number;
}

/** What a wake did: started the parked agent, or nothing (it runs, starts, or was stopped by its owner). */
export type WakeOutcome = 'woken' | 'not_parked';

export type AutoscaleOutcome =
  | { changed: false }
  | { changed: true; previous: number; current: number; limitedBy?: QuotaDetails };

/** What a rollout sets on the agent: a deploy object, and for a rollback the rest of the target's configuration. */
type RolledOut = Pick<AgentRow, 'deploy'> & Partial<Pick<AgentRow, 'model' | 'provider' | 'api_key_sealed' | 'system_prompt'>>;

/**
 * Redeploy, rollback and scale: each changes the agent in one transaction under the
 * account's and the agent's row locks (quotas are checked there, before anything starts;
 * a redeploy or rollback is recorded as a deployment there too), then queues the
 * orchestrator's part, which runs after the answer (AgentRunner.request).
 */
export class DeploymentService {
  constructor(
    private readonly db: Knex,
    private readonly clock: Clock,
    private readonly box: SecretBox,
    private readonly runner: AgentRunner | undefined,
    private readonly presenter: PresenterSettings,
    private readonly recorder: DeploymentRecorder,
    /** Told when a change makes the agent wakeable at the edge or not (scale to zero); none without an edge. */
    private readonly edge?: EdgeSync,
    /** Told of a deploy, rollback or scale the plan refused (quota.exceeded). */
    private readonly events?: WebhookEvents,
    /** What the orchestrator in use can deliver (registry credentials' kinds). */
    private readonly deployRules: DeployRules = ANY_ORCHESTRATOR,
  ) {}

  /** A new version from the current deploy object with `input` over it; the model key stays unless env sets its variable. */
  async deploy(principal: Principal, audit: AuditContext, agentId: string, input: DeployInput, expectedVersion?: number): Promise<Agent> {
    if (input.build_path !== undefined) throw new PlatformError('BUILD_NOT_SUPPORTED');
    const updated = await this.announcingQuota(principal.accountId, agentId, () => inTransaction(this.db, async (repos) => {
      const agent = await this.lockForChange(repos, principal.accountId, agentId, expectedVersion);
      const deploy = resolveDeploy(input, agent.deploy, this.box, this.deployRules);
      await this.checkQuota(repos, agent, footprintOf(deploy));
      const rolled = await this.rollOut(repos, principal, agent, { deploy }, null);
      await this.recordChange(repos, audit, rolled, 'agent.deploy', { version: rolled.deployed_version, changed: deployChanges(input) });
      return rolled;
    }));
    this.runner?.request('run', updated);
    return agentView(updated, this.presenter);
  }

  /**
   * A new version whose configuration is the target deployment's copy: deploy object
   * (replicas and the sealed secret values included), model, model key and system prompt.
   * It rolls out like any deploy: health-gated, the serving replicas stay if it fails.
   */
  async rollback(principal: Principal, audit: AuditContext, agentId: string, input: RollbackBody, expectedVersion?: number): Promise<Agent> {
    const updated = await this.announcingQuota(principal.accountId, agentId, () => inTransaction(this.db, async (repos) => {
      const agent = await this.lockForChange(repos, principal.accountId, agentId, expectedVersion);
      const target = await repos.deployments.find(agent.id, input.deployment_id);
      if (!target) throw new PlatformError('DEPLOYMENT_NOT_FOUND');
      await this.checkQuota(repos, agent, footprintOf(target.deploy));
      const { deploy, model, provider, api_key_sealed, system_prompt } = target;
      const rolled = await this.rollOut(repos, principal, agent, { deploy, model, provider, api_key_sealed, system_prompt }, target.id);
      await this.recordChange(repos, audit, rolled, 'agent.rollback', { version: rolled.deployed_version, deployment_id: target.id });
      return rolled;
    }));
    this.runner?.request('run', updated);
    return agentView(updated, this.presenter);
  }

  /** Sets the configuration as the agent's next version, the one the drivers roll out, and records the deployment. */
  private async rollOut(repos: Repositories, principal: Principal, agent: AgentRow, configuration: RolledOut, rollbackOf: string | null): Promise<AgentRow> {
    const replicas = configuration.deploy.replicas;
    const updated = (await repos.agents.update(agent.account_id, agent.id, {
      ...configuration,
      ...runtimeLabels(configuration.deploy),
      desired_replicas: replicas,
      deployed_version: agent.version + 1,
      status: replicas === 0 ? 'stopped' : agent.replicas > 0 ? agent.status : 'pending',
      parked_at: null,
      error: null,
    }, this.clock.now()))!;
    await this.projectWakeable(repos, agent, updated);
    await this.recorder.record(repos, updated, { createdBy: principal.userId, rollbackOf });
    return updated;
  }

  async scale(principal: Principal, audit: AuditContext, agentId: string, input: ScaleBody, expectedVersion?: number): Promise<ScaleResult> {
    const { previous, updated } = await this.announcingQuota(principal.accountId, agentId, () => inTransaction(this.db, async (repos) => {
      const agent = await this.lockForChange(repos, principal.accountId, agentId, expectedVersion);
      const previous = agent.desired_replicas;
      const target = input.direction === 'up' ? previous + input.count : previous - input.count;
      // An auto-scaled agent may be moved by hand only within the bounds the scaler keeps.
      const lowest = agent.deploy.auto_scale ? agent.deploy.min_replicas : 0;
      if (target < lowest || target > agent.deploy.max_replicas) {
        const bounds = agent.deploy.auto_scale ? 'deploy.min_replicas to deploy.max_replicas, as it is auto-scaled' : 'deploy.max_replicas';
        throw validationError([{
          loc: ['body', 'count'],
          msg: `would make ${target} replicas; the agent allows ${lowest} to ${agent.deploy.max_replicas} (${bounds}) and has ${previous}`,
          type: 'value_error.range',
        }]);
      }
      if (target > previous) await this.checkQuota(repos, agent, this.replicaChange(agent, target));
      const updated = await this.setReplicas(repos, agent, target);
      await this.recordChange(repos, audit, updated, 'agent.scale', { replicas_from: previous, replicas_to: target });
      return { previous, updated };
    }));
    this.applyReplicas(updated);
    return {
      agent_id: agentId,
      previous_replicas: previous,
      current_replicas: updated.desired_replicas,
      direction: input.direction,
      status: updated.status,
    };
  }

  /**
   * The scaler's way to the same change as `scale`, on behalf of the platform: only while
   * the agent is still auto-scaled and still at `expected` replicas (a manual scale or a
   * redeploy meanwhile wins; the next pass decides again). A scale-out goes as far towards
   * `desired` as the plan allows; when not one more replica fits, QUOTA_EXCEEDED is thrown.
   */
  async autoscale(agentId: string, expected: number, desired: number): Promise<AutoscaleOutcome> {
    const accountId = (await repositoriesOn(this.db).agents.findAny(agentId))?.account_id;
    if (!accountId) return { changed: false };
    const outcome = await inTransaction(this.db, async (repos): Promise<AutoscaleOutcome & { updated?: AgentRow }> => {
      const agent = await this.lockForChange(repos, accountId, agentId);
      if (!agent.deploy.auto_scale || agent.desired_replicas !== expected || desired === expected) return { changed: false };
      let target = desired;
      let limitedBy: QuotaDetails | undefined;
      while (target > expected) {
        try {
          await this.checkQuota(repos, agent, this.replicaChange(agent, target));
          break;
        } catch (error) {
          // Not even one more replica fits: the caller decides how to report it.
          if (!isQuotaExceeded(error) || target === expected + 1) throw error;
          limitedBy ??= error.details as unknown as QuotaDetails;
          target -= 1;
        }
      }
      const updated = await this.setReplicas(repos, agent, target);
      await this.recordChange(repos, SYSTEM_CONTEXT, updated, 'agent.scale', { replicas_from: expected, replicas_to: target, by: 'autoscaler' });
      return { changed: true, previous: expected, current: target, limitedBy, updated };
    });
    if (outcome.updated) this.applyReplicas(outcome.updated);
    const { updated: _updated, ...result } = outcome;
    return result;
  }

  /**
   * Parks an idle agent that scales to zero (the idle parker's call): 0 replicas, still
   * `running`, woken by its next request. Only while it is still at `expected` replicas
   * and still scales to zero; deploy.replicas keeps its count, so a redeploy starts it.
   */
  async park(agentId: string, expected: number): Promise<boolean> {
    const accountId = (await repositoriesOn(this.db).agents.findAny(agentId))?.account_id;
    if (!accountId) return false;
    const updated = await inTransaction(this.db, async (repos) => {
      const agent = await this.lockForChange(repos, accountId, agentId);
      if (!wakeable(agent) || agent.desired_replicas !== expected || expected === 0) return undefined;
      const parked = await this.setReplicas(repos, agent, 0, { parked: true });
      await this.recordChange(repos, SYSTEM_CONTEXT, parked, 'agent.scale', { replicas_from: expected, replicas_to: 0, by: 'idle_parker' });
      return parked;
    });
    if (updated) this.applyReplicas(updated);
    return updated !== undefined;
  }

  /**
   * Starts one replica of a parked agent, for a request waiting at the edge: the same
   * change as a manual scale to 1, quota checked (QUOTA_EXCEEDED when the account has no
   * room). An agent that is not parked is left as it is.
   */
  async wake(agentId: string): Promise<WakeOutcome> {
    const accountId = (await repositoriesOn(this.db).agents.findAny(agentId))?.account_id;
    if (!accountId) return 'not_parked';
    const { agent, woken } = await inTransaction(this.db, async (repos) => {
      const agent = await this.lockForChange(repos, accountId, agentId);
      if (agent.parked_at === null || agent.desired_replicas !== 0) return { agent, woken: false };
      await this.checkQuota(repos, agent, this.replicaChange(agent, 1));
      const updated = await this.setReplicas(repos, agent, 1);
      await this.recordChange(repos, SYSTEM_CONTEXT, updated, 'agent.scale', { replicas_from: 0, replicas_to: 1, by: 'wake' });
      return { agent: updated, woken: true };
    });
    if (woken) this.applyReplicas(agent);
    // Replicas asked for yet none routable (the Nomad Autoscaler took it to 0, a lost scale):
    // the driver is told the count again, which changes nothing where it already holds.
    else if (agent.desired_replicas > 0 && agent.deployed_version !== null) this.runner?.request('scale', agent);
    return woken ? 'woken' : 'not_parked';
  }

  private replicaChange(agent: AgentRow, replicas: number): FootprintChange {
    return { ...footprintOf(agent.deploy), replicas };
  }

  private async setReplicas(repos: Repositories, agent: AgentRow, target: number, { parked = false } = {}): Promise<AgentRow> {
    if (target === 0) await this.recorder.cancelInProgress(repos, agent.id, 'scaled to 0 replicas before the rollout finished');
    const updated = (await repos.agents.update(agent.account_id, agent.id, {
      // A parked agent's deploy keeps the count it ran with: parking is not its owner's choice.
      deploy: parked ? agent.deploy : { ...agent.deploy, replicas: target },
      desired_replicas: target,
      deployed_version: agent.deployed_version ?? agent.version + 1,
      status: parked ? 'running' : target === 0 && agent.replicas === 0 ? 'stopped' : 'scaling',
      parked_at: parked ? this.clock.now() : null,
    }, this.clock.now()))!;
    await this.projectWakeable(repos, agent, updated);
    return updated;
  }

  /** The audit event of a change to `agent`, in the change's transaction. */
  private recordChange(repos: Repositories, audit: AuditContext, agent: AgentRow, action: 'agent.deploy' | 'agent.rollback' | 'agent.scale', details: AuditDetails): Promise<void> {
    const at = this.clock.now();
    return recordAudit(repos, audit, { accountId: agent.account_id, at, action, target: { type: 'agent', id: agent.id }, agentId: agent.id, details });
  }

  /**
   * Runs `change` (a deploy, rollback or scale asked for by a user) and, when the plan
   * refuses it, tells the account's webhooks (quota.exceeded) in a transaction of its own:
   * the refused one rolls back. The platform's own scale-outs (autoscale, wake) are left
   * out: they would repeat the refusal on every pass or request.
   */
  private async announcingQuota<T>(accountId: string, agentId: string, change: () => Promise<T>): Promise<T> {
    try {
      return await change();
    } catch (error) {
      if (isQuotaExceeded(error) && this.events) {
        const events = this.events;
        await inTransaction(this.db, async (repos) => {
          const agent = await repos.agents.find(accountId, agentId);
          if (agent) await events.record(repos, 'quota.exceeded', agent, { reason: error.message });
        });
      }
      throw error;
    }
  }

  /** The edge learns whether a request that finds no replica may start the agent, in the same transaction. */
  private async projectWakeable(repos: Repositories, before: AgentRow, after: AgentRow): Promise<void> {
    if (wakeable(before) !== wakeable(after)) await this.edge?.putAgent(repos, after);
  }

  /** After the commit, queued: a never-deployed agent gets its first job; a deployed one a new count. */
  private applyReplicas(updated: AgentRow): void {
    this.runner?.request(updated.deployed_version === updated.version ? 'run' : 'scale', updated);
  }

  private async lockForChange(repos: Repositories, accountId: string, agentId: string, expectedVersion?: number): Promise<AgentRow> {
    // The account first, then the agent: every path takes them in this order, so none deadlocks.
    await repos.accounts.lock(accountId);
    const agent = await repos.agents.findForUpdate(accountId, agentId);
    if (!agent) throw notFound('Agent');
    if (expectedVersion !== undefined && agent.version !== expectedVersion) {
      throw new PlatformError('PRECONDITION_FAILED', `Agent is at version ${agent.version}, not ${expectedVersion}`, { current_version: agent.version });
    }
    return agent;
  }

  /** `change.replicas` is what this agent will ask for; the rest of the account is counted without it. */
  private async checkQuota(repos: Repositories, agent: AgentRow, change: FootprintChange): Promise<void> {
    const account = await repos.accounts.find(agent.account_id);
    if (!account || account.exempt) return;
    assertWithinLimits(limitsOf(account.plan), await repos.agents.footprint(agent.account_id, agent.id), change);
  }
}

/** What an agent running `deploy` asks of its plan. */
function footprintOf(deploy: StoredDeploy): FootprintChange {
  return { agents: 0, replicas: deploy.replicas, replicaCpu: deploy.resources.cpu, replicaMemoryMb: deploy.resources.memory_mb };
}
