import type { Knex } from 'knex';
import type { Clock } from '../clock.js';
import { limitsOf } from '../domain/plans.js';
import { notFound } from '../errors.js';
import { repositoriesOn } from '../repositories/index.js';
import type { AccountUsage } from '../schemas/account.js';
import type { Principal } from './principal.js';

export class UsageService {
  constructor(private readonly db: Knex, private readonly clock: Clock) {}

  async usage(principal: Principal): Promise<AccountUsage> {
    const repos = repositoriesOn(this.db);
    const account = await repos.accounts.find(principal.accountId);
    if (!account) throw notFound('Account');
    const running = await repos.agents.running(account.id);
    return {
      plan: account.plan,
      exempt: account.exempt,
      limits: { ...limitsOf(account.plan) },
      usage: { agents: running.agents, replicas: running.replicas, vcpu: running.vcpu, memory_mb: running.memory_mb },
      period: {
        start: startOfMonthUtc(this.clock.now()).toISOString(),
        // Metered figures arrive with replica intervals and edge request counts.
        replica_hours: 0,
        vcpu_hours: 0,
        memory_gb_hours: 0,
        requests: 0,
      },
    };
  }
}

export const startOfMonthUtc = (at: Date) => new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), 1));
