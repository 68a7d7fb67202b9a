import type { SubscriptionService } from '../../services/subscription-service.js';
import type { UsageService } from '../../services/usage-service.js';
import { AccountUsage, Subscription, SubscriptionBody } from '../../schemas/account.js';
import { ErrorBody } from '../../schemas/common.js';
import { defineRoute } from '../route.js';

export const accountRoutes = (usage: UsageService, subscriptions: SubscriptionService) => [
  defineRoute({
    method: 'get',
    path: '/account/usage',
    operationId: 'getAccountUsage',
    tag: 'Account',
    summary: "Get the account's usage",
    description: 'Plan, limits, what runs now and what was metered this month (UTC)',
    auth: 'any',
    responses: { 200: { description: 'The account usage', schema: AccountUsage } },
    handler: async ({ principal }) => ({ status: 200, body: await usage.usage(principal) }),
  }),
  defineRoute({
    method: 'post',
    path: '/account/subscription',
    operationId: 'changeSubscription',
    tag: 'Account',
    summary: "Change the account's plan",
    description: "Move the account to another plan through the billing provider (the owner only); the plan's limits apply at once",
    auth: 'any',
    writes: true,
    body: SubscriptionBody,
    responses: {
      200: { description: 'The account is on the plan', schema: Subscription },
      403: { description: 'AUTHORISATION_DENIED: only the owner changes the plan', schema: ErrorBody },
      409: { description: 'ALREADY_SUBSCRIBED (the current plan) or NO_BILLING_ACCOUNT (the provider has no customer)', schema: ErrorBody },
      502: { description: 'BILLING_PROVIDER_FAILED: the provider refused or did not answer; nothing changed', schema: ErrorBody },
      503: { description: 'BILLING_NOT_CONFIGURED: this platform has no billing provider', schema: ErrorBody },
    },
    handler: async ({ principal, audit, body }) => ({ status: 200, body: await subscriptions.subscribe(principal, audit, body.plan) }),
  }),
];
