import type { UsageService } from '../../services/usage-service.js';
import { AccountUsage } from '../../schemas/account.js';
import { defineRoute } from '../route.js';

export const accountRoutes = (usage: UsageService) => [
  defineRoute({
    method: 'get',
    path: '/account/usage',
    summary: 'Plan, limits, what runs now and what was metered this month (UTC)',
    tag: 'Account',
    auth: 'any',
    responses: { 200: { description: 'The account usage', schema: AccountUsage } },
    handler: async ({ principal }) => ({ status: 200, body: await usage.usage(principal) }),
  }),
];
