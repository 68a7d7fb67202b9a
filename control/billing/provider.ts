import type { PlanName } from '../domain/plans.js';

/**
 * What the control API asks of a billing service (Stripe, Paddle, an invoice system).
 * None exists in this project: `POST /account/subscription` answers 503
 * BILLING_NOT_CONFIGURED until one is passed to buildControl (control/compose.ts).
 * docs/billing.md says how to add one.
 */
export interface BillingProvider {
  /** Shown in logs. */
  readonly name: string;
  /** The provider's customer for the account, or null when it has none (409 NO_BILLING_ACCOUNT). */
  customerFor(accountId: string): Promise<BillingCustomer | null>;
  /**
   * Puts the customer on `plan` (charging, prorating, cancelling as the provider does) and
   * resolves once the provider has accepted it. A rejection leaves the plan unchanged.
   */
  subscribe(customer: BillingCustomer, plan: PlanName): Promise<void>;
}

export interface BillingCustomer {
  /** The provider's own id of the customer. */
  id: string;
}

/** How long a provider call may take before the request fails with BILLING_PROVIDER_FAILED. */
export const BILLING_CALL_TIMEOUT_MS = 10_000;
