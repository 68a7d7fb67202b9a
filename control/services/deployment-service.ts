import type { Knex } from 'knex';
import type { Clock } from '../clock.js';
import type { SecretBox } from '../crypto/secret-box.js';
import { resolveDeploy, runtimeLabels } from '../domain/deploy.js';
import { limitsOf } from '../domain/plans.js';
import { notFound, PlatformError, validationError } from '../errors.js';
import type { AgentRow } from '../repositories/agents.js';
import { inTransaction, type Repositories } from '../repositories/index.js';
import type { Agent, DeployInput, ScaleBody, ScaleResult } from '../schemas/agents.js';
import { agentView, type PresenterSettings } from './agent-presenter.js';
import type { AgentRunner } from './agent-runner.js';
import type { Principal } from './principal.js';
import { assertWithinLimits, type FootprintChange } from './quota.js';

/**
 * Redeploy and scale: each changes the agent in one transaction under the account's and
 * the agent's row locks (quotas are checked there, before anything starts), then tells
 * the orchestrator.
 */
export class DeploymentService {
  constructor(
    private readonly db: Knex,
    private readonly clock: Clock,
    private readonly box: SecretBox,
    private readonly runner: AgentRunner | undefined,
    private readonly presenter: PresenterSettings,
  ) {}

  /** A new version from the current deploy object with `input` over it; the model key stays unless env sets its variable. */
  async deploy(principal: Principal, agentId: string, input: DeployInput, expectedVersion?: number): Promise<Agent> {
    if (input.build_path !== undefined) throw new PlatformError('BUILD_NOT_SUPPORTED');
    const updated = await inTransaction(this.db, async (repos) => {
      const agent = await this.lockForChange(repos, principal, agentId, expectedVersion);
      const deploy = resolveDeploy(input, agent.deploy, this.box);
      await this.checkQuota(repos, agent, { agents: 0, replicas: deploy.replicas, replicaCpu: deploy.resources.cpu, replicaMemoryMb: deploy.resources.memory_mb });
      return (await repos.agents.update(principal.accountId, agentId, {
        deploy,
        ...runtimeLabels(deploy),
        desired_replicas: deploy.replicas,
        deployed_version: agent.version + 1,
        status: deploy.replicas === 0 ? 'stopped' : agent.replicas > 0 ? agent.status : 'pending',
        error: null,
      }, this.clock.now()))!;
    });
    await this.runner?.run(agentId);
    return agentView(updated, this.presenter);
  }

  async scale(principal: Principal, agentId: string, input: ScaleBody, expectedVersion?: number): Promise<ScaleResult> {
    const { previous, updated } = await inTransaction(this.db, async (repos) => {
      const agent = await this.lockForChange(repos, principal, agentId, expectedVersion);
      const previous = agent.desired_replicas;
      const target = input.direction === 'up' ? previous + input.count : previous - input.count;
      if (target < 0 || target > agent.deploy.max_replicas) {
        throw validationError([{
          loc: ['body', 'count'],
          msg: `would make ${target} replicas; the agent allows 0 to ${agent.deploy.max_replicas} (deploy.max_replicas) and has ${previous}`,
          type: 'value_error.range',
        }]);
      }
      if (target > previous) {
        await this.checkQuota(repos, agent, { agents: 0, replicas: target, replicaCpu: agent.deploy.resources.cpu, replicaMemoryMb: agent.deploy.resources.memory_mb });
      }
      const updated = (await repos.agents.update(principal.accountId, agentId, {
        deploy: { ...agent.deploy, replicas: target },
        desired_replicas: target,
        deployed_version: agent.deployed_version ?? agent.version + 1,
        status: target === 0 && agent.replicas === 0 ? 'stopped' : 'scaling',
      }, this.clock.now()))!;
      return { previous, updated };
    });
    if (updated.deployed_version === updated.version) await this.runner?.run(agentId);
    else await this.runner?.scale(agentId, updated.desired_replicas);
    return {
      agent_id: agentId,
      previous_replicas: previous,
      current_replicas: updated.desired_replicas,
      direction: input.direction,
      status: updated.status,
    };
  }

  private async lockForChange(repos: Repositories, principal: Principal, agentId: string, expectedVersion?: number): Promise<AgentRow> {
    // The account first, then the agent: every path takes them in this order, so none deadlocks.
    await repos.accounts.lock(principal.accountId);
    const agent = await repos.agents.findForUpdate(principal.accountId, agentId);
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
