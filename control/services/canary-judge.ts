import type { Knex } from 'knex';
import type { Logger } from 'pino';
import type { Clock } from '../../contract/clock.js';
import type { VersionFigures as EdgeVersionFigures } from '../../contract/request-figures.js';
import type { AgentRow } from '../domain/agent.js';
import { SYSTEM_CONTEXT } from '../domain/audit.js';
import { judgeCanary, servingSince, strategyOf } from '../domain/canary.js';
import { PlatformError } from '../domain/errors.js';
import { repositoriesOn } from '../repositories/index.js';
import type { CanaryService } from './canary-service.js';
import { PeriodicPass, PeriodicService, type LoopOptions } from './periodic-pass.js';

/**
 * Watches every running canary (issue 36) and ends it by its own figures: each pass reads
 * the last minute of both versions' requests as the edge counted them (one Redis read per
 * canary) and asks the judgement (domain/canary.ts) whether to abort it as failed or
 * promote it. Only a canary that serves (its `canary` event: its replicas are routable) is
 * judged, so one whose replicas are still starting is neither promoted early nor failed for
 * want of requests. A promote or abort that another copy of the control API made first is
 * NOT_A_RUNNING_CANARY here, and ignored.
 */
export class CanaryJudge extends PeriodicService {
  protected readonly loop: PeriodicPass;

  constructor(
    private readonly db: Knex,
    private readonly canaries: CanaryService,
    private readonly figures: (agentId: string) => Promise<EdgeVersionFigures>,
    /** The wall clock: the edge stamps each second of figures by it. */
    private readonly clock: Clock,
    intervalMs: number,
    private readonly logger: Logger,
    options: LoopOptions = {},
  ) {
    super();
    this.loop = new PeriodicPass({ ...options, loop: 'canary-judge', intervalMs, logger, pass: () => this.judgeAll(), failureMessage: 'canary judging pass failed' });
  }

  private async judgeAll(): Promise<void> {
    const repos = repositoriesOn(this.db);
    for (const agent of await repos.agents.withCanary()) {
      // One agent's trouble (a lock wait, Redis) must not stop the others'.
      await this.judge(agent).catch((error: unknown) => {
        if (error instanceof PlatformError && error.code === 'NOT_A_RUNNING_CANARY') return;
        this.logger.warn({ err: error, agent_id: agent.id }, 'could not judge the canary');
      });
    }
  }

  private async judge(agent: AgentRow): Promise<void> {
    const canary = agent.canary!;
    const startedAt = servingSince(await repositoriesOn(this.db).deployments.eventsAfter(canary.deployment_id, 0));
    if (startedAt === null) return;
    const { stable, canary: own } = await this.figures(agent.id);
    const verdict = judgeCanary({
      strategy: strategyOf(canary.strategy),
      canary: { requests: own.requestCount, errors: own.errorCount },
      stable: { requests: stable.requestCount, errors: stable.errorCount },
      startedAt,
      now: this.clock.now(),
    });
    if (verdict.action === 'wait') return;
    this.logger.info({ agent_id: agent.id, deployment_id: canary.deployment_id, action: verdict.action, reason: verdict.reason }, `canary ${verdict.action === 'abort' ? 'aborted' : 'promoted'} on its figures`);
    if (verdict.action === 'abort') {
      await this.canaries.abort(agent.account_id, SYSTEM_CONTEXT, agent.id, canary.deployment_id, { status: 'failed', reason: verdict.reason });
    } else {
      await this.canaries.promote(agent.account_id, SYSTEM_CONTEXT, agent.id, canary.deployment_id);
    }
  }
}
