import type { Knex } from 'knex';
import type { Redis } from 'ioredis';
import type { Clock } from '../../contract/clock.js';
import { limitsOf } from '../domain/plans.js';
import { edgeKeyNames } from '../../contract/edge-keys.js';
import { notFound } from '../domain/errors.js';
import { repositoriesOn } from '../repositories/index.js';
import type { AgentModelUse, ModelUse } from '../repositories/model-usage.js';
import type { AccountUsage } from '../schemas/account.js';
import type { Principal } from './principal.js';

/**
 * GET /account/usage: what runs now, and what was used since the first day of the month
 * (UTC): replica time from the replica intervals, requests from the flushed counts plus
 * what authz has counted in Redis since the last flush.
 */
export class UsageService {
  constructor(private readonly db: Knex, private readonly redis: Redis, private readonly clock: Clock) {}

  async usage(principal: Principal): Promise<AccountUsage> {
    const repos = repositoriesOn(this.db);
    const account = await repos.accounts.find(principal.accountId);
    if (!account) throw notFound('Account');
    const now = this.clock.now();
    const start = startOfMonthUtc(now);
    const month = monthOf(now);
    const [running, totals, flushed, unflushed, models] = await Promise.all([
      repos.agents.running(account.id),
      repos.usage.totals(account.id, start, now),
      repos.usage.requests(account.id, month),
      this.unflushedRequests(account.id, month),
      repos.modelUsage.ofAccount(account.id, month),
    ]);
    return {
      plan: account.plan,
      exempt: account.exempt,
      limits: { ...limitsOf(account.plan) },
      usage: { agents: running.agents, replicas: running.replicas, vcpu: running.vcpu, memory_mb: running.memory_mb, warm_parked_replicas: running.warm_parked_replicas },
      period: {
        start: start.toISOString(),
        replica_hours: toFourDecimals(totals.replicaHours),
        vcpu_hours: toFourDecimals(totals.vcpuHours),
        memory_gb_hours: toFourDecimals(totals.memoryGbHours),
        requests: flushed + unflushed,
        model_usage: modelUsageView(models),
      },
    };
  }

  /** Counted at the edge but not flushed yet: the figure is live, not 30 s behind. */
  private async unflushedRequests(accountId: string, month: string): Promise<number> {
    const agents = await repositoriesOn(this.db).agents.ofAccount(accountId);
    if (agents.length === 0) return 0;
    const counts = await this.redis.mget(...agents.map((agent) => edgeKeyNames.usage(agent.slug, month)));
    return counts.reduce((sum, count) => sum + Number(count ?? 0), 0);
  }
}

/** The account's month of model use, in total and by agent. */
function modelUsageView(byAgent: AgentModelUse[]): AccountUsage['period']['model_usage'] {
  const view = (use: ModelUse) => ({
    input_tokens: use.inputTokens,
    output_tokens: use.outputTokens,
    estimated_cost_usd: toSixDecimals(use.costUsd),
    unpriced_model_calls: use.unpricedCalls,
  });
  const total = byAgent.reduce<ModelUse>((sum, use) => ({
    inputTokens: sum.inputTokens + use.inputTokens,
    outputTokens: sum.outputTokens + use.outputTokens,
    costUsd: sum.costUsd + use.costUsd,
    unpricedCalls: sum.unpricedCalls + use.unpricedCalls,
  }), { inputTokens: 0, outputTokens: 0, costUsd: 0, unpricedCalls: 0 });
  return { ...view(total), by_agent: byAgent.map((use) => ({ agent_id: use.agentId, ...view(use) })) };
}

/** A millionth of a dollar: below that, a sum of prices per million tokens is rounding noise. */
const toSixDecimals = (value: number) => Math.round(value * 1_000_000) / 1_000_000;

export const startOfMonthUtc = (at: Date) => new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), 1));
/** The month as authz names its usage counters: `YYYY-MM`, UTC. */
export const monthOf = (at: Date) => at.toISOString().slice(0, 7);
const toFourDecimals = (value: number) => Math.round(value * 10_000) / 10_000;
