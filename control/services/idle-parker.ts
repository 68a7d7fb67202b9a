import type { Knex } from 'knex';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { Clock } from '../../contract/clock.js';
import { edgeKeyNames } from '../../contract/edge-keys.js';
import { FIGURES_WINDOW_SECONDS } from '../../contract/request-figures.js';
import { scaleToZeroAfterSeconds } from '../domain/deploy.js';
import { afterLook, parkingDue, type ActivityMemory } from '../domain/scale-to-zero.js';
import { repositoriesOn } from '../repositories/index.js';
import type { PlatformScaling } from './platform-scaling.js';
import { PeriodicPass, PeriodicService, type LoopOptions } from './periodic-pass.js';

/**
 * The edge writes a second's figures within about a second of its end (and Envoy's access
 * log adds its own flush, about a second): a look reaches back this much before the last.
 */
const REPORTING_DELAY_SECONDS = 5;

/**
 * Parks auto-scaled agents with min_replicas 0 that the edge forwarded no request to for
 * their scale_to_zero_after_seconds (docs/autoscaling.md, "Scale to zero"), on both
 * drivers: the Nomad Autoscaler cannot see the edge. Each pass asks Redis, per agent, one
 * EXISTS over the per-second request figures since its previous look (one hash-tag slot);
 * authz's Check path writes nothing for it. Parking goes through PlatformScaling, the same
 * change as any scale, so the driver's scale call, deployments and metering follow.
 */
export class IdleParker extends PeriodicService {
  private readonly memory = new Map<string, ActivityMemory>();
  protected readonly loop: PeriodicPass;

  constructor(
    private readonly db: Knex,
    private readonly redis: Redis,
    private readonly scaling: PlatformScaling,
    /** The wall clock: the edge stamps each second of figures by it. */
    private readonly clock: Clock,
    intervalMs: number,
    private readonly logger: Logger,
    options: LoopOptions = {},
  ) {
    super();
    this.loop = new PeriodicPass({ ...options, loop: 'idle-parker', intervalMs, logger, pass: () => this.parkIdle(), failureMessage: 'idle parking pass failed' });
  }

  private async parkIdle(): Promise<void> {
    const agents = await repositoriesOn(this.db).agents.parkable();
    const present = new Set(agents.map((agent) => agent.id));
    for (const id of this.memory.keys()) if (!present.has(id)) this.memory.delete(id);
    for (const agent of agents) {
      const now = this.clock.now().getTime();
      const previous = this.memory.get(agent.id);
      const sawRequests = await this.requestsSince(agent.id, previous?.lastLookAt ?? now, now);
      const memory = afterLook(previous, { at: now, sawRequests, reachMs: (FIGURES_WINDOW_SECONDS - REPORTING_DELAY_SECONDS) * 1000 });
      this.memory.set(agent.id, memory);
      const afterSeconds = scaleToZeroAfterSeconds(agent.deploy);
      if (!parkingDue(memory, now, afterSeconds)) continue;
      // One agent's trouble (a lock wait, Redis) must not stop the others'.
      const parked = await this.scaling.park(agent.id, agent.desired_replicas).catch((error: unknown) => {
        this.logger.warn({ err: error, agent_id: agent.id }, 'could not park idle agent');
        return false;
      });
      if (parked) this.logger.info({ agent_id: agent.id, from: agent.desired_replicas, idle_seconds: Math.round((now - memory.lastActiveAt) / 1000), after_seconds: afterSeconds }, 'parked idle agent');
      this.memory.delete(agent.id);
    }
  }

  /** Whether any second from shortly before `sinceMs` to `nowMs` holds forwarded requests. */
  private async requestsSince(agentId: string, sinceMs: number, nowMs: number): Promise<boolean> {
    const last = Math.floor(nowMs / 1000);
    const first = Math.max(Math.floor(sinceMs / 1000) - REPORTING_DELAY_SECONDS, last - FIGURES_WINDOW_SECONDS + 1);
    const keys: string[] = [];
    for (let second = first; second <= last; second += 1) keys.push(edgeKeyNames.requestFigures(agentId, second));
    return (await this.redis.exists(...keys)) > 0;
  }
}
