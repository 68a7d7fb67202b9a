import type { Knex } from 'knex';
import type { Clock } from '../../contract/clock.js';
import type { SecretBox } from '../crypto/secret-box.js';
import { ANY_ORCHESTRATOR, resolveDeploy, runtimeLabels, type DeployRules, type StoredDeploy } from '../domain/deploy.js';
import { resolveCanaryStrategy, type RunningCanary, type StoredCanaryStrategy } from '../domain/canary.js';
import type { DeploymentRow } from '../domain/deployment.js';
import { isQuotaExceeded, PlatformError, validationError } from '../domain/errors.js';
import type { AgentRow } from '../domain/agent.js';
import type { AuditContext } from '../domain/audit.js';
import { inTransaction, type Repositories } from '../repositories/index.js';
import type { Agent, DeployInput, ScaleBody, ScaleResult } from '../schemas/agents.js';
import type { RollbackBody } from '../schemas/deployments.js';
import { agentView, type PresenterSettings } from './agent-presenter.js';
import type { AgentRunner } from './agent-runner.js';
import { deployChanges } from './audit-details.js';
import type { DeploymentRecorder } from './deployment-recorder.js';
import type { EdgeSync } from './edge-sync.js';
import type { Principal } from './principal.js';
import { checkQuota, footprintOf, lockForChange, replicaChange, type ReplicaChanges } from './replica-changes.js';
import type { WebhookEvents } from './webhook-events.js';

/** What a DeploymentService works with. */
export interface DeploymentServiceParts {
  db: Knex;
  clock: Clock;
  box: SecretBox;
  presenter: PresenterSettings;
  recorder: DeploymentRecorder;
  /** Told when a deploy makes the agent wakeable at the edge or not (scale to zero). */
  edge: EdgeSync;
  /** A scale's shared steps, the same as the platform's (PlatformScaling). */
  changes: ReplicaChanges;
  /** Takes a deploy's or rollback's job after the commit. */
  runner: AgentRunner;
  /** Told of a deploy, rollback or scale the plan refused (quota.exceeded). */
  events?: WebhookEvents;
  /** What the orchestrator in use can deliver (registry credentials' kinds). */
  deployRules?: DeployRules;
}

/** What a rollout sets on the agent: a deploy object, and for a rollback the rest of the target's configuration. */
type RolledOut = Pick<AgentRow, 'deploy'> & Partial<Pick<AgentRow, 'model' | 'provider' | 'api_key_sealed' | 'system_prompt'>>;

/**
 * What a user asks of a deployed agent: a redeploy, a rollback, a scale. Each changes the
 * agent in one transaction under the account's and the agent's row locks (quotas are
 * checked there, before anything starts; a redeploy or rollback is recorded as a
 * deployment there too), then queues the orchestrator's part, which runs after the
 * answer (AgentRunner.request). What the platform decides itself (autoscale, park, wake)
 * is PlatformScaling's.
 */
export class DeploymentService {
  private readonly deployRules: DeployRules;

  constructor(private readonly parts: DeploymentServiceParts) {
    this.deployRules = parts.deployRules ?? ANY_ORCHESTRATOR;
  }

  /** A new version from the current deploy object with `input` over it; the model key stays unless env sets its variable. */
  async deploy(principal: Principal, audit: AuditContext, agentId: string, input: DeployInput, expectedVersion?: number): Promise<Agent> {
    if (input.build_path !== undefined) throw new PlatformError('BUILD_NOT_SUPPORTED');
    const { db, box, changes, runner, presenter } = this.parts;
    const strategy = input.strategy?.type === 'canary' ? resolveCanaryStrategy(input.strategy) : null;
    const updated = await this.announcingQuota(principal.accountId, agentId, () => inTransaction(db, async (repos) => {
      const agent = await lockForChange(repos, principal.accountId, agentId, expectedVersion);
      if (agent.canary) {
        throw new PlatformError('CANARY_NOT_POSSIBLE', `Deployment ${agent.canary.number} is a canary still running: promote or abort it first`);
      }
      const deploy = resolveDeploy(input, agent.deploy, box, this.deployRules);
      if (strategy) {
        const stable = await this.stableFor(repos, agent, strategy, deploy);
        // Both versions run while the canary does: the plan must hold them together.
        await checkQuota(repos, agent, { ...footprintOf(deploy), replicas: agent.desired_replicas + strategy.replicas });
        const rolled = await this.startCanary(repos, principal, agent, deploy, strategy, stable);
        await changes.record(repos, audit, rolled, 'agent.deploy', { version: rolled.deployed_version, changed: deployChanges(input), strategy: 'canary', percent: strategy.percent });
        return rolled;
      }
      await checkQuota(repos, agent, footprintOf(deploy));
      const rolled = await this.rollOut(repos, principal, agent, { deploy }, null);
      await changes.record(repos, audit, rolled, 'agent.deploy', { version: rolled.deployed_version, changed: deployChanges(input) });
      return rolled;
    }));
    runner.request('run', updated);
    return agentView(updated, presenter);
  }

  /**
   * The deployment a canary runs beside: the agent's deployed version, fully rolled out and
   * serving. Not while a rollout is under way, nor for an agent stopped or parked (there is
   * no traffic to share), nor for one whose replicas the autoscaler moves (it would resize
   * the canary: docs/deployments.md, "Canary deploys").
   */
  private async stableFor(repos: Repositories, agent: AgentRow, strategy: StoredCanaryStrategy, deploy: StoredDeploy): Promise<DeploymentRow> {
    const refuse = (why: string) => new PlatformError('CANARY_NOT_POSSIBLE', `A canary runs beside a version that serves: ${why}`);
    if (agent.deployed_version === null) throw refuse('this agent was never deployed');
    if (agent.desired_replicas === 0 || agent.parked_at !== null) throw refuse('this agent has no replica running (stopped or parked)');
    if (agent.deploy.auto_scale || deploy.auto_scale) throw refuse('auto-scaled agents are deployed rolling (the autoscaler would resize the canary)');
    if (strategy.replicas > deploy.max_replicas) {
      throw validationError([{ loc: ['body', 'strategy', 'replicas'], msg: `at most deploy.max_replicas (${deploy.max_replicas})`, type: 'value_error.range' }]);
    }
    const stable = await repos.deployments.findByVersion(agent.id, agent.deployed_version);
    if (!stable || stable.status !== 'succeeded') throw refuse(`deployment ${stable?.number ?? '?'} has not finished rolling out`);
    return stable;
  }

  /**
   * The new version as the agent's configuration, recorded as a canary deployment, beside
   * `stable`: the replica count stays the stable version's (desired_replicas), the canary
   * runs its own (strategy.replicas), and the edge learns the split in this transaction.
   */
  private async startCanary(repos: Repositories, principal: Principal, agent: AgentRow, deploy: StoredDeploy, strategy: StoredCanaryStrategy, stable: DeploymentRow): Promise<AgentRow> {
    const { clock, edge, recorder } = this.parts;
    const now = clock.now();
    const configuration = { deploy, ...runtimeLabels(deploy), deployed_version: agent.version + 1, error: null };
    // Recorded from the row as it is about to be, so the agent changes once (one version, as any deploy).
    const deployment = await recorder.record(repos, { ...agent, ...configuration }, { createdBy: principal.userId, rollbackOf: null, strategy });
    const canary: RunningCanary = { deployment_id: deployment.id, number: deployment.number, stable_deployment_id: stable.id, strategy };
    const updated = (await repos.agents.update(agent.account_id, agent.id, { ...configuration, canary }, now))!;
    await edge.putAgent(repos, updated);
    return updated;
  }

  /**
   * A new version whose configuration is the target deployment's copy: deploy object
   * (replicas and the sealed secret values included), model, model key and system prompt.
   * It rolls out like any deploy: health-gated, the serving replicas stay if it fails.
   */
  async rollback(principal: Principal, audit: AuditContext, agentId: string, input: RollbackBody, expectedVersion?: number): Promise<Agent> {
    const { db, changes, runner, presenter } = this.parts;
    const updated = await this.announcingQuota(principal.accountId, agentId, () => inTransaction(db, async (repos) => {
      const agent = await lockForChange(repos, principal.accountId, agentId, expectedVersion);
      const target = await repos.deployments.find(agent.id, input.deployment_id);
      if (!target) throw new PlatformError('DEPLOYMENT_NOT_FOUND');
      await checkQuota(repos, agent, footprintOf(target.deploy));
      const { deploy, model, provider, api_key_sealed, system_prompt } = target;
      const rolled = await this.rollOut(repos, principal, agent, { deploy, model, provider, api_key_sealed, system_prompt }, target.id);
      await changes.record(repos, audit, rolled, 'agent.rollback', { version: rolled.deployed_version, deployment_id: target.id });
      return rolled;
    }));
    runner.request('run', updated);
    return agentView(updated, presenter);
  }

  /** Sets the configuration as the agent's next version, the one the drivers roll out, and records the deployment. */
  private async rollOut(repos: Repositories, principal: Principal, agent: AgentRow, configuration: RolledOut, rollbackOf: string | null): Promise<AgentRow> {
    const { clock, edge, recorder } = this.parts;
    const replicas = configuration.deploy.replicas;
    const updated = (await repos.agents.update(agent.account_id, agent.id, {
      ...configuration,
      ...runtimeLabels(configuration.deploy),
      desired_replicas: replicas,
      deployed_version: agent.version + 1,
      status: replicas === 0 ? 'stopped' : agent.replicas > 0 ? agent.status : 'pending',
      parked_at: null,
      warm_parked_until: null,
      error: null,
    }, clock.now()))!;
    await edge.projectParking(repos, agent, updated);
    await recorder.record(repos, updated, { createdBy: principal.userId, rollbackOf });
    return updated;
  }

  async scale(principal: Principal, audit: AuditContext, agentId: string, input: ScaleBody, expectedVersion?: number): Promise<ScaleResult> {
    const { db, changes } = this.parts;
    const { previous, updated } = await this.announcingQuota(principal.accountId, agentId, () => inTransaction(db, async (repos) => {
      const agent = await lockForChange(repos, principal.accountId, agentId, expectedVersion);
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
      if (target > previous) await checkQuota(repos, agent, replicaChange(agent, target));
      const updated = await changes.set(repos, agent, target);
      await changes.record(repos, audit, updated, 'agent.scale', { replicas_from: previous, replicas_to: target });
      return { previous, updated };
    }));
    changes.apply(updated);
    return {
      agent_id: agentId,
      previous_replicas: previous,
      current_replicas: updated.desired_replicas,
      direction: input.direction,
      status: updated.status,
    };
  }

  /**
   * Runs `change` (a deploy, rollback or scale asked for by a user) and, when the plan
   * refuses it, tells the account's webhooks (quota.exceeded) in a transaction of its own:
   * the refused one rolls back.
   */
  private async announcingQuota<T>(accountId: string, agentId: string, change: () => Promise<T>): Promise<T> {
    try {
      return await change();
    } catch (error) {
      const { db, events } = this.parts;
      if (isQuotaExceeded(error) && events) {
        await inTransaction(db, async (repos) => {
          const agent = await repos.agents.find(accountId, agentId);
          if (agent) await events.record(repos, 'quota.exceeded', agent, { reason: error.message });
        });
      }
      throw error;
    }
  }
}
