import type { Clock } from '../../contract/clock.js';
import type { StoredDeploy } from '../domain/deploy.js';
import { limitsOf } from '../domain/plans.js';
import { notFound, PlatformError } from '../domain/errors.js';
import type { AgentRow } from '../domain/agent.js';
import type { AuditContext, AuditDetails } from '../domain/audit.js';
import type { Repositories } from '../repositories/index.js';
import type { AgentRunner } from './agent-runner.js';
import { recordAudit } from './audit-log.js';
import type { DeploymentRecorder } from './deployment-recorder.js';
import type { EdgeSync } from './edge-sync.js';
import { assertWithinLimits, type FootprintChange } from './quota.js';

export interface ReplicaChangeParts {
  clock: Clock;
  /** Ends a rollout still in progress when the agent is scaled to 0. */
  recorder: DeploymentRecorder;
  /** Told, in the change's transaction, when the agent becomes wakeable at the edge or stops being so. */
  edge: EdgeSync;
  /** Takes the orchestrator's part after the commit. */
  runner: AgentRunner;
}

/**
 * What every change of an agent's replicas does, whoever asks for it: a user
 * (DeploymentService.scale) or the platform (PlatformScaling: the autoscaler, the idle
 * parker, a wake). Inside the change's transaction, under the locks `lockForChange` took:
 * the row's new count, its edge projection and its audit event; after the commit, the
 * orchestrator's part, queued.
 */
export class ReplicaChanges {
  constructor(private readonly parts: ReplicaChangeParts) {}

  /**
   * Sets the agent to `target` replicas; `parked`, for the idle parker, keeps deploy.replicas
   * and marks it parked, warm until `warmUntil` when given (the driver freezes its replica).
   */
  async set(repos: Repositories, agent: AgentRow, target: number, { parked = false, warmUntil = null }: { parked?: boolean; warmUntil?: Date | null } = {}): Promise<AgentRow> {
    const { clock, recorder, edge } = this.parts;
    if (target === 0) await recorder.cancelInProgress(repos, agent.id, 'scaled to 0 replicas before the rollout finished');
    const updated = (await repos.agents.update(agent.account_id, agent.id, {
      // A parked agent's deploy keeps the count it ran with: parking is not its owner's choice.
      deploy: parked ? agent.deploy : { ...agent.deploy, replicas: target },
      desired_replicas: target,
      deployed_version: agent.deployed_version ?? agent.version + 1,
      status: parked ? 'running' : target === 0 && agent.replicas === 0 ? 'stopped' : 'scaling',
      parked_at: parked ? clock.now() : null,
      warm_parked_until: parked ? warmUntil : null,
    }, clock.now()))!;
    await edge.projectParking(repos, agent, updated);
    return updated;
  }

  /** The audit event of a change to `agent`, in the change's transaction. */
  record(repos: Repositories, audit: AuditContext, agent: AgentRow, action: 'agent.deploy' | 'agent.rollback' | 'agent.scale', details: AuditDetails): Promise<void> {
    const at = this.parts.clock.now();
    return recordAudit(repos, audit, { accountId: agent.account_id, at, action, target: { type: 'agent', id: agent.id }, agentId: agent.id, details });
  }

  /** After the commit, queued: a never-deployed agent gets its first job; a deployed one a new count. */
  apply(updated: AgentRow): void {
    this.parts.runner.request(updated.deployed_version === updated.version ? 'run' : 'scale', updated);
  }
}

/** Locks the account, then the agent, for a change; PRECONDITION_FAILED when the agent is no longer at `expectedVersion`. */
export async function lockForChange(repos: Repositories, accountId: string, agentId: string, expectedVersion?: number): Promise<AgentRow> {
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
export async function checkQuota(repos: Repositories, agent: AgentRow, change: FootprintChange): Promise<void> {
  const account = await repos.accounts.find(agent.account_id);
  if (!account || account.exempt) return;
  assertWithinLimits(limitsOf(account.plan), await repos.agents.footprint(agent.account_id, agent.id), change);
}

/** What an agent running `deploy` asks of its plan. */
export function footprintOf(deploy: StoredDeploy): FootprintChange {
  return { agents: 0, replicas: deploy.replicas, replicaCpu: deploy.resources.cpu, replicaMemoryMb: deploy.resources.memory_mb };
}

/** What the agent asks of its plan at `replicas` replicas. */
export const replicaChange = (agent: AgentRow, replicas: number): FootprintChange => ({ ...footprintOf(agent.deploy), replicas });
