import type { Clock } from '../../contract/clock.js';
import { ID_PREFIX, newId } from '../crypto/tokens.js';
import type { AgentRow } from '../domain/agent.js';
import type { StoredCanaryStrategy } from '../domain/canary.js';
import type { DeploymentRow } from '../domain/deployment.js';
import type { Repositories } from '../repositories/index.js';
import type { WebhookEvents } from './webhook-events.js';

export interface DeploymentOrigin {
  /** The user who asked (directly or through their personal API key). */
  createdBy: string | null;
  /** The deployment whose configuration a rollback restores. */
  rollbackOf: string | null;
  /** A canary deployment's settings (issue 36); absent: rolling. */
  strategy?: StoredCanaryStrategy;
}

/**
 * Records a rollout of an agent (a create that deploys, a deploy, a rollback) inside the
 * transaction that changed the agent, under the agent's row lock, so the history holds
 * exactly the changes that committed and numbers them without gaps or repeats.
 */
export class DeploymentRecorder {
  constructor(
    private readonly clock: Clock,
    /** DEPLOYMENT_HISTORY_LIMIT: deployments kept per agent. */
    private readonly historyLimit: number,
    /** Told of a deployment that ends as it is recorded (0 replicas: agent.deployed). */
    private readonly events?: WebhookEvents,
  ) {}

  /** `agent` is the row as changed: its deployed_version is the job version the drivers now roll out. */
  async record(repos: Repositories, agent: AgentRow, origin: DeploymentOrigin): Promise<DeploymentRow> {
    if (agent.deployed_version === null) throw new Error(`agent ${agent.id} has no deployed version to record`);
    const now = this.clock.now();
    const deployments = repos.deployments;
    // The drivers stop rolling out an older version once a newer job arrives: those deployments end here.
    for (const older of await deployments.inProgress(agent.id)) await deployments.finish(older.id, 'superseded', null, now);
    const recorded = await deployments.insert({
      id: newId(ID_PREFIX.deployment),
      agent_id: agent.id,
      account_id: agent.account_id,
      agent_version: agent.deployed_version,
      // The agent's own sealed values are copied, so a later change of the agent never alters this copy.
      deploy: agent.deploy,
      model: agent.model,
      provider: agent.provider,
      api_key_sealed: agent.api_key_sealed,
      system_prompt: agent.system_prompt,
      rollback_of: origin.rollbackOf,
      strategy: origin.strategy ?? null,
      created_by: origin.createdBy,
      created_at: now,
    });
    await deployments.addEvent({ deployment_id: recorded.id, phase: 'queued', replica_id: null, message: `deployment ${recorded.number} queued`, at: now });
    const settled = agent.desired_replicas === 0 ? await this.finishEmpty(repos, agent, recorded, now) : recorded;
    await deployments.prune(agent.id, this.historyLimit);
    return settled;
  }

  /**
   * A scale to 0 replicas while a rollout goes on stops it: nothing of its version will
   * run, so its deployment ends `cancelled` rather than staying in progress for ever.
   */
  async cancelInProgress(repos: Repositories, agentId: string, reason: string): Promise<void> {
    for (const deployment of await repos.deployments.inProgress(agentId)) await repos.deployments.finish(deployment.id, 'cancelled', reason, this.clock.now());
  }

  /** At 0 replicas nothing rolls out and nothing can fail a health check: the deployment is done as recorded. */
  private async finishEmpty(repos: Repositories, agent: AgentRow, deployment: DeploymentRow, now: Date): Promise<DeploymentRow> {
    const finished = await repos.deployments.finish(deployment.id, 'succeeded', null, now);
    await repos.deployments.addEvent({ deployment_id: deployment.id, phase: 'succeeded', replica_id: null, message: 'nothing to roll out: 0 replicas', at: now });
    await this.events?.record(repos, 'agent.deployed', agent, { deployment: finished ?? deployment });
    return finished ?? deployment;
  }
}
