import type { Knex } from 'knex';
import type { Logger } from 'pino';
import type { Clock } from '../../contract/clock.js';
import { withDeadline } from '../../contract/deadline.js';
import type { AuditContext } from '../domain/audit.js';
import { BILLING_CALL_TIMEOUT_MS, type BillingProvider } from '../billing/provider.js';
import { limitsOf, type PlanName } from '../domain/plans.js';
import { notFound, PlatformError } from '../domain/errors.js';
import { inTransaction } from '../repositories/index.js';
import type { Subscription } from '../schemas/account.js';
import type { EdgeSync } from './edge-sync.js';
import { recordAudit } from './audit-log.js';
import type { Principal } from './principal.js';

/** Moves an account to another plan through the billing provider; only the owner may. */
export class SubscriptionService {
  constructor(
    private readonly db: Knex,
    private readonly clock: Clock,
    private readonly edge: EdgeSync,
    private readonly billing: BillingProvider | undefined,
    private readonly logger: Logger,
  ) {}

  /**
   * Under the account's row lock, so two parallel requests cannot both subscribe: the
   * provider is asked first, then the plan changes and the edge's per-agent limit follows
   * in the same transaction (a Redis failure rolls the plan back; the provider's side is
   * then reconciled by the operator, see docs/billing.md).
   */
  async subscribe(principal: Principal, audit: AuditContext, plan: PlanName): Promise<Subscription> {
    if (principal.role !== 'owner') throw new PlatformError('AUTHORISATION_DENIED', 'Only the account owner may change the plan');
    const billing = this.billing;
    if (!billing) throw new PlatformError('BILLING_NOT_CONFIGURED');
    return inTransaction(this.db, async (repos) => {
      const account = await repos.accounts.lock(principal.accountId);
      if (!account) throw notFound('Account');
      if (account.plan === plan) throw new PlatformError('ALREADY_SUBSCRIBED', `The account is already on the ${plan} plan`, { plan });
      const customer = await this.callProvider(billing, 'customerFor', () => billing.customerFor(account.id));
      if (!customer) throw new PlatformError('NO_BILLING_ACCOUNT');
      await this.callProvider(billing, 'subscribe', () => billing.subscribe(customer, plan));
      await repos.accounts.update(account.id, { plan });
      await this.edge.putAccountAgents(repos, account.id);
      await recordAudit(repos, audit, {
        accountId: account.id,
        at: this.clock.now(),
        action: 'account.plan_change',
        target: { type: 'account', id: account.id },
        details: { plan_from: account.plan, plan_to: plan },
      });
      this.logger.info({ account_id: account.id, from: account.plan, to: plan, provider: billing.name }, 'plan changed');
      return { plan, limits: { ...limitsOf(plan) } };
    });
  }

  private async callProvider<T>(billing: BillingProvider, call: string, work: () => Promise<T>): Promise<T> {
    try {
      return await withDeadline(work(), BILLING_CALL_TIMEOUT_MS, `billing provider ${billing.name}`);
    } catch (error) {
      this.logger.error({ err: error, provider: billing.name, call }, 'billing provider call failed');
      throw new PlatformError('BILLING_PROVIDER_FAILED');
    }
  }
}
