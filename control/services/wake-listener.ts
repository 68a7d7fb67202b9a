import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { edgeKeyNames } from '../../contract/edge-keys.js';
import { isQuotaExceeded } from '../domain/errors.js';
import type { PlatformScaling, QuotaDetails } from './platform-scaling.js';
import type { EdgeSync } from './edge-sync.js';

/** How long one BRPOP blocks: only how soon a dead connection is noticed; an item returns it at once. */
const BLOCK_SECONDS = 10;
const RETRY_AFTER_ERROR_MS = 1_000;

/**
 * Wakes parked agents the moment a request at the edge asks (docs/autoscaling.md, "Wake").
 * authz LPUSHes the agent id on the wake queue once per wake; this BRPOPs it on a
 * connection of its own, so there is no polling interval, a wake recorded while no copy
 * of the control API ran is taken when one starts, and with several copies exactly one
 * pops each. The agent is scaled to 1 through PlatformScaling, quota checked; when the
 * plan has no room, the edge is told (the waiting Checks answer 503 naming the limit).
 */
export class WakeListener {
  private blocking: Redis | undefined;
  private listening: Promise<void> | undefined;
  private readonly inFlight = new Set<Promise<void>>();

  constructor(
    private readonly redis: Redis,
    private readonly scaling: PlatformScaling,
    private readonly edge: EdgeSync,
    private readonly logger: Logger,
  ) {}

  start(): void {
    if (this.blocking) return;
    // A blocking read needs a connection to itself, a command deadline longer than its block, and to queue until connected;
    // and no socket timeout, since a block is a silence it asked for (control/db/redis.ts).
    const blocking = this.redis.duplicate({ commandTimeout: (BLOCK_SECONDS + 5) * 1000, socketTimeout: undefined, enableOfflineQueue: true });
    blocking.on('error', () => undefined);
    this.blocking = blocking;
    this.listening = this.listen(blocking);
  }

  /** Stops taking wakes and waits for those being handled; one popped meanwhile is lost, and its Checks time out. */
  async stop(): Promise<void> {
    const blocking = this.blocking;
    if (!blocking) return;
    this.blocking = undefined;
    blocking.disconnect();
    await this.listening;
    await Promise.allSettled(this.inFlight);
  }

  private async listen(blocking: Redis): Promise<void> {
    while (this.blocking === blocking) {
      try {
        const popped = await blocking.brpop(edgeKeyNames.wakeQueue, BLOCK_SECONDS);
        if (popped) this.track(this.wake(popped[1]));
      } catch (error) {
        if (this.blocking !== blocking) return;
        this.logger.warn({ err: error }, 'wake queue read failed; retrying');
        await new Promise((resolve) => setTimeout(resolve, RETRY_AFTER_ERROR_MS));
      }
    }
  }

  private track(handling: Promise<void>): void {
    this.inFlight.add(handling);
    void handling.finally(() => this.inFlight.delete(handling));
  }

  private async wake(agentId: string): Promise<void> {
    try {
      const outcome = await this.scaling.wake(agentId);
      this.logger.info({ agent_id: agentId, outcome }, outcome === 'woken' ? 'woke parked agent for a request' : 'wake asked for an agent that is not parked');
    } catch (error) {
      const body = isQuotaExceeded(error)
        ? quotaRefusal(error.details as unknown as QuotaDetails)
        : 'service unavailable: the agent could not be started, retry shortly\n';
      if (!isQuotaExceeded(error)) this.logger.error({ err: error, agent_id: agentId }, 'wake failed');
      else this.logger.warn({ agent_id: agentId, ...(error.details as object) }, 'wake refused by the plan quota');
      await this.edge.refuseWake(agentId, body).catch((refusal: unknown) => this.logger.warn({ err: refusal, agent_id: agentId }, 'could not tell the edge a wake failed'));
    }
  }
}

/** The plain-text body of the 503 a request gets when the plan has no room to wake the agent. */
export const quotaRefusal = ({ limit, value, requested }: QuotaDetails): string =>
  `service unavailable: the agent is parked and cannot start: the account's plan quota ${limit} is ${value}, starting it needs ${requested}\n`;
