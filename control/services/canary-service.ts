import type { Knex } from 'knex';
import type { Clock } from '../../contract/clock.js';
import type { AgentRow } from '../domain/agent.js';
import type { AuditContext } from '../domain/audit.js';
import type { RunningCanary } from '../domain/canary.js';
import { runtimeLabels } from '../domain/deploy.js';
import type { DeploymentRow } from '../domain/deployment.js';
import { PlatformError } from '../domain/errors.js';
import { inTransaction, type Repositories } from '../repositories/index.js';
import type { AgentRunner } from './agent-runner.js';
import { recordAudit } from './audit-log.js';
import type { EdgeSync } from './edge-sync.js';
import type { EventNotifier } from './event-notifier.js';
import { checkQuota, footprintOf, lockForChange } from './replica-changes.js';
import type { WebhookEvents } from './webhook-events.js';

export interface CanaryServiceParts {
  db: Knex;
  clock: Clock;
  edge: EdgeSync;
  runner: AgentRunner;
  /** Wakes the deployment's event streams after a promote or abort is recorded. */
  notifier: EventNotifier;
  /** agent.deploy_failed when the judge aborts a canary. */
  events?: WebhookEvents;
}

/** How an abort ends the canary's deployment: `cancelled` by hand, `failed` by the judge's figures. */
export interface AbortOutcome {
  status: 'cancelled' | 'failed';
  reason: string;
}

/**
 * Ends a running canary (issue 36), by hand or by the canary judge. Each is one transaction
 * under the account's and the agent's row locks: the edge learns the end inside it (the
 * canary's share stops before the commit), and the orchestrator's part is queued after.
 * - Promote: the new version becomes the whole agent, scaled to its deploy.replicas; the old
 *   replicas retire once the new ones run (the driver's health-gated rollout), and the
 *   deployment tracker ends the deployment `succeeded` then.
 * - Abort: the agent's configuration returns to the stable deployment's copy at its version,
 *   so the driver keeps the stable replicas as they are and stops the canary's at once.
 */
export class CanaryService {
  constructor(private readonly parts: CanaryServiceParts) {}

  async promote(accountId: string, audit: AuditContext, agentId: string, deploymentId: string): Promise<DeploymentRow> {
    const { db, clock, edge, runner, notifier } = this.parts;
    const { agent, deployment } = await inTransaction(db, async (repos) => {
      const agent = await lockForChange(repos, accountId, agentId);
      const canary = runningCanary(agent, deploymentId);
      await checkQuota(repos, agent, footprintOf(agent.deploy));
      const now = clock.now();
      const promoted = (await repos.agents.update(accountId, agentId, { canary: null, desired_replicas: agent.deploy.replicas, status: 'scaling' }, now))!;
      await edge.putAgent(repos, promoted);
      await repos.deployments.addEvent({
        deployment_id: canary.deployment_id, phase: 'promoted', replica_id: null, at: now,
        message: `the new version takes all traffic at ${agent.deploy.replicas} replica(s), then the old drains`,
      });
      await this.audit(repos, audit, agent, 'deployment.promote', { deployment_id: canary.deployment_id, number: canary.number });
      return { agent: promoted, deployment: (await repos.deployments.find(agentId, canary.deployment_id))! };
    });
    notifier.notify(deployment.id);
    runner.request('run', agent);
    return deployment;
  }

  async abort(accountId: string, audit: AuditContext, agentId: string, deploymentId: string, outcome: AbortOutcome): Promise<DeploymentRow> {
    const { db, clock, edge, runner, notifier, events } = this.parts;
    const { agent, deployment } = await inTransaction(db, async (repos) => {
      const agent = await lockForChange(repos, accountId, agentId);
      const canary = runningCanary(agent, deploymentId);
      const stable = await repos.deployments.find(agentId, canary.stable_deployment_id);
      if (!stable) throw new Error(`the canary's stable deployment ${canary.stable_deployment_id} is gone`);
      const now = clock.now();
      const reverted = (await repos.agents.update(accountId, agentId, {
        canary: null,
        deploy: stable.deploy,
        ...runtimeLabels(stable.deploy),
        model: stable.model,
        provider: stable.provider,
        api_key_sealed: stable.api_key_sealed,
        system_prompt: stable.system_prompt,
        deployed_version: stable.agent_version,
      }, now))!;
      await edge.putAgent(repos, reverted);
      const finished = (await repos.deployments.finish(canary.deployment_id, outcome.status, outcome.status === 'failed' ? outcome.reason : null, now))!;
      await repos.deployments.addEvent({
        deployment_id: canary.deployment_id, phase: 'aborted', replica_id: null, at: now,
        message: `${outcome.reason}: deployment ${stable.number} serves alone`,
      });
      await this.audit(repos, audit, agent, 'deployment.abort', { deployment_id: canary.deployment_id, number: canary.number, reason: outcome.reason });
      if (outcome.status === 'failed') await events?.record(repos, 'agent.deploy_failed', reverted, { deployment: finished, reason: outcome.reason });
      return { agent: reverted, deployment: finished };
    });
    notifier.notify(deployment.id);
    runner.request('run', agent);
    return deployment;
  }

  private audit(repos: Repositories, audit: AuditContext, agent: AgentRow, action: 'deployment.promote' | 'deployment.abort', details: Record<string, string | number>): Promise<void> {
    return recordAudit(repos, audit, { accountId: agent.account_id, at: this.parts.clock.now(), action, target: { type: 'agent', id: agent.id }, agentId: agent.id, details });
  }
}

/** The agent's canary, when it is `deploymentId`; else NOT_A_RUNNING_CANARY (promoted, aborted, never one). */
function runningCanary(agent: AgentRow, deploymentId: string): RunningCanary {
  if (agent.canary?.deployment_id !== deploymentId) throw new PlatformError('NOT_A_RUNNING_CANARY');
  return agent.canary;
}
