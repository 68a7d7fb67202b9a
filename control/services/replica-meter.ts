import type { Knex } from 'knex';
import type { Logger } from 'pino';
import type { Clock } from '../../contract/clock.js';
import type { Orchestrator } from '../orchestrator/types.js';
import { inTransaction, repositoriesOn } from '../repositories/index.js';
import { PeriodicPass, type LoopOptions } from './periodic-pass.js';

/**
 * Records replica time as intervals, whatever the driver: a replica's interval opens when
 * the orchestrator first reports it `running` and closes when it no longer does. It
 * measures an agent whenever the driver says something changed and every pass, and each
 * pass moves `last_seen_at` forward, so a crash of the control API loses at most one pass
 * of replica time (see docs/usage.md).
 */
export class ReplicaMeter {
  private readonly inFlight = new Map<string, Promise<void>>();
  private readonly loop: PeriodicPass;

  constructor(
    private readonly db: Knex,
    private readonly orchestrator: Orchestrator,
    private readonly clock: Clock,
    intervalMs: number,
    private readonly logger: Logger,
    options: LoopOptions = {},
  ) {
    this.loop = new PeriodicPass({ ...options, loop: 'replica-meter', intervalMs, logger, pass: () => this.pass(), failureMessage: 'metering pass failed; the next pass retries' });
  }

  async start(): Promise<void> {
    this.orchestrator.onChange((agentId) => void this.measure(agentId));
    await this.closeCrashLeft();
    await this.loop.runOnce();
    this.loop.start();
  }

  /** Stops the timer and measures once more, so replica time runs up to the shutdown. */
  async stop(): Promise<void> {
    await this.loop.stop();
    await this.loop.runOnce();
    await Promise.allSettled(this.inFlight.values());
  }

  /** Measures every agent that should run or still has an open interval. */
  async pass(): Promise<void> {
    const repos = repositoriesOn(this.db);
    const ids = new Set([...(await repos.agents.deployed()).map((agent) => agent.id), ...(await repos.usage.agentsWithOpenIntervals())]);
    for (const agentId of ids) await this.measure(agentId);
  }

  /**
   * Intervals left open by a control API that stopped without closing them: those whose
   * replica no longer runs end where they were last seen, not now (the replica may have
   * died any time after). Those still running stay open: the replica ran all along.
   */
  async closeCrashLeft(): Promise<void> {
    const usage = repositoriesOn(this.db).usage;
    for (const agentId of await usage.agentsWithOpenIntervals()) {
      const running = await this.runningReplicaIds(agentId);
      if (running === undefined) continue;
      const gone = (await usage.openReplicaIds(agentId)).filter((id) => !running.has(id));
      await usage.closeAtLastSeen(agentId, gone);
      if (gone.length > 0) this.logger.info({ agentId, replicas: gone.length }, 'closed replica intervals left open at their last sighting');
    }
  }

  /** One measurement of one agent at a time; a change arriving meanwhile is measured after it. */
  measure(agentId: string): Promise<void> {
    const previous = this.inFlight.get(agentId) ?? Promise.resolve();
    const next = previous.then(() => this.measureNow(agentId)).catch((error: unknown) => {
      this.logger.warn({ agentId, err: error }, 'metering an agent failed; the next pass retries');
    });
    this.inFlight.set(agentId, next);
    void next.finally(() => {
      if (this.inFlight.get(agentId) === next) this.inFlight.delete(agentId);
    });
    return next;
  }

  private async measureNow(agentId: string): Promise<void> {
    const running = await this.runningReplicaIds(agentId);
    if (running === undefined) return;
    const now = this.clock.now();
    await inTransaction(this.db, async (repos) => {
      const agent = await repos.agents.findAny(agentId);
      const open = new Set(await repos.usage.openReplicaIds(agentId));
      // A deleted agent runs nothing any more, whatever the driver still reports.
      const billable = agent ? running : new Set<string>();
      await repos.usage.close(agentId, [...open].filter((id) => !billable.has(id)), now);
      await repos.usage.touch(agentId, [...open].filter((id) => billable.has(id)), now);
      if (!agent) return;
      for (const replicaId of billable) {
        if (open.has(replicaId)) continue;
        await repos.usage.open({
          replicaId, agentId, accountId: agent.account_id, cpu: agent.deploy.resources.cpu, memoryMb: agent.deploy.resources.memory_mb,
        }, now);
      }
    });
  }

  /** The replicas the driver reports running; undefined when it cannot tell (it is asked again next pass). */
  private async runningReplicaIds(agentId: string): Promise<Set<string> | undefined> {
    try {
      const status = await this.orchestrator.status(agentId);
      return new Set((status?.replicas ?? []).filter((replica) => replica.state === 'running').map((replica) => replica.id));
    } catch (error) {
      this.logger.warn({ agentId, err: error }, 'orchestrator status unavailable; metering waits for the next pass');
      return undefined;
    }
  }
}
