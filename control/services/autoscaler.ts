import type { Knex } from 'knex';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { edgeKeyNames, windowOf } from '../../contract/edge-keys.js';
import type { Clock } from '../../contract/clock.js';
import type { AutoscaleSettings } from '../config/config.js';
import { decideReplicas } from '../domain/autoscale.js';
import { isQuotaExceeded } from '../domain/errors.js';
import type { Orchestrator } from '../orchestrator/types.js';
import type { AgentRow } from '../domain/agent.js';
import { repositoriesOn } from '../repositories/index.js';
import type { PlatformScaling, QuotaDetails } from './platform-scaling.js';
import { PeriodicPass, PeriodicService, type LoopOptions } from './periodic-pass.js';

/** The driver whose replicas are scaled, with the clock it stamps their start with (its own, not the API's). */
export interface ScaledDriver {
  orchestrator: Orchestrator;
  clock: Clock;
}

export type AutoscalerOptions = LoopOptions;

/** What an Autoscaler works with. */
export interface AutoscalerParts {
  db: Knex;
  /** Where the edge counts each agent's requests. */
  redis: Redis;
  driver: ScaledDriver;
  /** Makes each change, quota checked (PlatformScaling.autoscale). */
  scaling: PlatformScaling;
  clock: Clock;
  settings: AutoscaleSettings;
  logger: Logger;
}

/** What the scaler remembers of one agent between passes. */
interface AgentMemory {
  /** desired_replicas as last seen: a different count means someone scaled by hand or redeployed. */
  seenReplicas: number;
  lastScaleAt: Date | null;
  /** The last quota state warned about, so a held scale-out is logged once, not every pass. */
  warned: string | null;
}

/**
 * Keeps each auto-scaled agent (podman driver) between its min and max replicas by the
 * edge's request count of the last complete minute and the replicas' CPU. It changes the
 * count through PlatformScaling, the same change as the manual scale endpoint's, so the
 * plan's quota is checked in the same transaction under the account's lock. With Nomad, the
 * job's scaling block hands this to the Nomad Autoscaler instead.
 */
export class Autoscaler extends PeriodicService {
  private readonly memory = new Map<string, AgentMemory>();
  protected readonly loop: PeriodicPass;

  constructor(private readonly parts: AutoscalerParts, { exclusive, onPass }: AutoscalerOptions = {}) {
    super();
    this.loop = new PeriodicPass({
      loop: 'autoscaler', intervalMs: parts.settings.intervalMs, logger: parts.logger, exclusive, onPass, pass: () => this.scaleAll(), failureMessage: 'autoscale pass failed',
    });
  }

  private async scaleAll(): Promise<void> {
    const agents = await repositoriesOn(this.parts.db).agents.autoScaled();
    const present = new Set(agents.map((agent) => agent.id));
    for (const id of this.memory.keys()) if (!present.has(id)) this.memory.delete(id);
    for (const agent of agents) {
      // One agent's trouble (podman stats, a lock wait) must not stop the others'.
      await this.scaleOne(agent).catch((error) => this.parts.logger.warn({ err: error, agent_id: agent.id }, 'could not auto-scale agent'));
    }
  }

  private async scaleOne(agent: AgentRow): Promise<void> {
    const now = this.parts.clock.now();
    const memory = this.remember(agent, now);
    const requests = await this.requestsLastMinute(agent, now);
    const cpuPercent = await this.meanCpuOfAllotment(agent);
    const current = agent.desired_replicas;
    const decision = decideReplicas(
      { current, min: agent.deploy.min_replicas, max: agent.deploy.max_replicas, requestsLastMinute: requests, cpuPercent, lastScaleAt: memory.lastScaleAt, now },
      { rpmPerReplica: this.parts.settings.targetRpmPerReplica, cpuPercent: this.parts.settings.targetCpuPercent, cooldownMs: this.parts.settings.cooldownMs },
    );
    const signals = { agent_id: agent.id, requests_last_minute: requests, cpu_percent: cpuPercent, reason: decision.reason };
    if (decision.desired === current) {
      this.parts.logger.debug({ ...signals, replicas: current }, 'auto-scale: no change');
      return;
    }
    try {
      const outcome = await this.parts.scaling.autoscale(agent.id, current, decision.desired);
      if (!outcome.changed) return;
      this.memory.set(agent.id, { seenReplicas: outcome.current, lastScaleAt: now, warned: memory.warned });
      this.parts.logger.info({ ...signals, from: outcome.previous, to: outcome.current }, 'auto-scaled agent');
      if (outcome.limitedBy) this.warnOnce(agent.id, outcome.limitedBy, outcome.current, decision.desired, signals);
      else this.memory.get(agent.id)!.warned = null;
    } catch (error) {
      if (!isQuotaExceeded(error)) throw error;
      this.warnOnce(agent.id, error.details as unknown as QuotaDetails, current, decision.desired, signals);
    }
  }

  /** Notices changes made by others (manual scale, redeploy): the cool-down then starts from them. */
  private remember(agent: AgentRow, now: Date): AgentMemory {
    const known = this.memory.get(agent.id);
    if (!known) {
      const fresh = { seenReplicas: agent.desired_replicas, lastScaleAt: null, warned: null };
      this.memory.set(agent.id, fresh);
      return fresh;
    }
    if (known.seenReplicas !== agent.desired_replicas) {
      Object.assign(known, { seenReplicas: agent.desired_replicas, lastScaleAt: now, warned: null });
    }
    return known;
  }

  /** The edge's per-agent counter of the last complete one-minute window (authz writes it). */
  private async requestsLastMinute(agent: AgentRow, now: Date): Promise<number> {
    const counted = await this.parts.redis.get(edgeKeyNames.agentCounter(agent.slug, windowOf(now) - 1));
    return counted === null ? 0 : Number(counted);
  }

  /**
   * Mean CPU of the replicas as a percent of what each may use (resources.cpu): podman
   * reports percent of one core, so a replica of 0.5 vCPU at its limit shows 50 %, which
   * would never reach a 70 % target (Kubernetes' HPA likewise measures against requested CPU).
   */
  private async meanCpuOfAllotment(agent: AgentRow): Promise<number | null> {
    const { orchestrator, clock } = this.parts.driver;
    const [metrics, status] = await Promise.all([orchestrator.metrics(agent.id), orchestrator.status(agent.id)]);
    // AutoscaleSettings.cpuWarmupMs: a young replica's stats are its start-up, not its load.
    const settledSince = clock.now().getTime() - this.parts.settings.cpuWarmupMs;
    const settled = new Set(
      (status?.replicas ?? []).filter((r) => r.startedAt !== null && r.startedAt.getTime() <= settledSince).map((r) => r.id),
    );
    const samples = metrics.filter((sample) => settled.has(sample.replicaId));
    if (samples.length === 0) return null;
    const meanOfOneCore = samples.reduce((sum, sample) => sum + sample.cpuPercent, 0) / samples.length;
    return meanOfOneCore / agent.deploy.resources.cpu;
  }

  /** A scale-out the plan holds back is logged once per agent and state, never on every pass. */
  private warnOnce(agentId: string, quota: QuotaDetails, replicas: number, wanted: number, signals: object): void {
    const state = `${quota.limit}:${replicas}`;
    const memory = this.memory.get(agentId);
    if (memory?.warned === state) return;
    if (memory) memory.warned = state;
    this.parts.logger.warn(
      { ...signals, replicas, wanted, limit: quota.limit, limit_value: quota.value, requested: quota.requested },
      'auto-scale: scale-out held back by the plan quota',
    );
  }
}
