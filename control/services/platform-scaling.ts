import type { Knex } from 'knex';
import type { Clock } from '../../contract/clock.js';
import { warmParkSeconds } from '../domain/deploy.js';
import { isQuotaExceeded } from '../domain/errors.js';
import type { AgentRow } from '../domain/agent.js';
import { SYSTEM_CONTEXT } from '../domain/audit.js';
import { wakeable } from '../domain/scale-to-zero.js';
import { inTransaction, repositoriesOn } from '../repositories/index.js';
import type { AgentRunner } from './agent-runner.js';
import { checkQuota, lockForChange, replicaChange, type ReplicaChanges } from './replica-changes.js';

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

/**
 * The changes of an agent's replicas the platform decides, not its owner: the autoscaler's
 * (autoscale), the idle parker's (park) and a wake's, asked for by a request at the edge.
 * Each is the same change as a user's scale (ReplicaChanges: row locks, quota, audit event
 * `by` the platform), made only while the agent is still as the caller saw it, so a user's
 * change meanwhile wins. A refusal by the plan is not announced to the account's webhooks:
 * it would repeat on every pass or request.
 */
export class PlatformScaling {
  constructor(
    private readonly db: Knex,
    private readonly changes: ReplicaChanges,
    /** Tells the driver the count again when a wake finds replicas asked for yet none routable. */
    private readonly runner: AgentRunner,
    private readonly clock: Clock,
    /** The driver freezes a parked agent's replica for its warm_park_seconds (Orchestrator.warmParking). */
    private readonly warmParking: boolean,
  ) {}

  /**
   * The scaler's way to the same change as a manual scale: only while the agent is still
   * auto-scaled and still at `expected` replicas (a manual scale or a redeploy meanwhile
   * wins; the next pass decides again). A scale-out goes as far towards `desired` as the
   * plan allows; when not one more replica fits, QUOTA_EXCEEDED is thrown.
   */
  async autoscale(agentId: string, expected: number, desired: number): Promise<AutoscaleOutcome> {
    const accountId = await this.accountOf(agentId);
    if (!accountId) return { changed: false };
    const outcome = await inTransaction(this.db, async (repos): Promise<AutoscaleOutcome & { updated?: AgentRow }> => {
      const agent = await lockForChange(repos, accountId, agentId);
      if (!agent.deploy.auto_scale || agent.desired_replicas !== expected || desired === expected) return { changed: false };
      let target = desired;
      let limitedBy: QuotaDetails | undefined;
      while (target > expected) {
        try {
          await checkQuota(repos, agent, replicaChange(agent, target));
          break;
        } catch (error) {
          // Not even one more replica fits: the caller decides how to report it.
          if (!isQuotaExceeded(error) || target === expected + 1) throw error;
          limitedBy ??= error.details as unknown as QuotaDetails;
          target -= 1;
        }
      }
      const updated = await this.changes.set(repos, agent, target);
      await this.changes.record(repos, SYSTEM_CONTEXT, updated, 'agent.scale', { replicas_from: expected, replicas_to: target, by: 'autoscaler' });
      return { changed: true, previous: expected, current: target, limitedBy, updated };
    });
    if (outcome.updated) this.changes.apply(outcome.updated);
    const { updated: _updated, ...result } = outcome;
    return result;
  }

  /**
   * Parks an idle agent that scales to zero (the idle parker's call): 0 replicas, still
   * `running`, woken by its next request. Only while it is still at `expected` replicas
   * and still scales to zero; deploy.replicas keeps its count, so a redeploy starts it.
   * Warm until its warm_park_seconds are over where the driver can freeze its replica.
   */
  async park(agentId: string, expected: number): Promise<boolean> {
    const accountId = await this.accountOf(agentId);
    if (!accountId) return false;
    const updated = await inTransaction(this.db, async (repos) => {
      const agent = await lockForChange(repos, accountId, agentId);
      if (!wakeable(agent) || agent.desired_replicas !== expected || expected === 0) return undefined;
      const warmSeconds = this.warmParking ? warmParkSeconds(agent.deploy) : 0;
      const warmUntil = warmSeconds > 0 ? new Date(this.clock.now().getTime() + warmSeconds * 1000) : null;
      const parked = await this.changes.set(repos, agent, 0, { parked: true, warmUntil });
      await this.changes.record(repos, SYSTEM_CONTEXT, parked, 'agent.scale', { replicas_from: expected, replicas_to: 0, by: 'idle_parker', parking: warmUntil ? 'warm' : 'cold' });
      return parked;
    });
    if (updated) this.changes.apply(updated);
    return updated !== undefined;
  }

  /**
   * Starts one replica of a parked agent, for a request waiting at the edge: the same
   * change as a manual scale to 1, quota checked (QUOTA_EXCEEDED when the account has no
   * room). An agent that is not parked is left as it is.
   */
  async wake(agentId: string): Promise<WakeOutcome> {
    const accountId = await this.accountOf(agentId);
    if (!accountId) return 'not_parked';
    const { agent, woken } = await inTransaction(this.db, async (repos) => {
      const agent = await lockForChange(repos, accountId, agentId);
      if (agent.parked_at === null || agent.desired_replicas !== 0) return { agent, woken: false };
      await checkQuota(repos, agent, replicaChange(agent, 1));
      const updated = await this.changes.set(repos, agent, 1);
      await this.changes.record(repos, SYSTEM_CONTEXT, updated, 'agent.scale', { replicas_from: 0, replicas_to: 1, by: 'wake' });
      return { agent: updated, woken: true };
    });
    if (woken) this.changes.apply(agent);
    // Replicas asked for yet none routable (the Nomad Autoscaler took it to 0, a lost scale):
    // the driver is told the count again, which changes nothing where it already holds.
    else if (agent.desired_replicas > 0 && agent.deployed_version !== null) this.runner.request('scale', agent);
    return woken ? 'woken' : 'not_parked';
  }

  private async accountOf(agentId: string): Promise<string | undefined> {
    return (await repositoriesOn(this.db).agents.findAny(agentId))?.account_id;
  }
}
