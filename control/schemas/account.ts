import { Type, type Static } from '@sinclair/typebox';
import { PLAN_NAMES } from '../domain/plans.js';
import { StringEnum, Timestamp } from './common.js';
import * as ex from './examples.js';

const Limits = Type.Object({
  max_agents: Type.Integer(),
  max_replicas: Type.Integer(),
  max_vcpu: Type.Number(),
  max_memory_mb: Type.Integer(),
  max_replica_cpu: Type.Number(),
  max_replica_memory_mb: Type.Integer(),
  max_agent_rpm: Type.Integer(),
  max_custom_domains: Type.Integer({ description: "custom domains across the account's agents" }),
});

const ModelUseFields = {
  input_tokens: Type.Integer(),
  output_tokens: Type.Integer(),
  estimated_cost_usd: Type.Number({ description: "the model calls with a price in the platform's table (docs/traces.md, \"Cost\")" }),
  unpriced_model_calls: Type.Integer({ description: 'model calls whose model has no price: their cost is not in estimated_cost_usd' }),
};

/** Tokens and estimated cost of the month, from the traces replicas sent (docs/traces.md); kept beyond the traces' retention. */
const ModelUsage = Type.Object({
  ...ModelUseFields,
  by_agent: Type.Array(Type.Object({ agent_id: Type.String(), ...ModelUseFields }), { description: 'each agent with model calls this month, deleted ones included' }),
});

export const AccountUsage = Type.Object(
  {
    plan: Type.String(),
    exempt: Type.Boolean(),
    limits: Limits,
    usage: Type.Object({
      agents: Type.Integer(),
      replicas: Type.Integer(),
      vcpu: Type.Number(),
      memory_mb: Type.Integer({ description: "memory of the running replicas and of warm-parked ones: a parked agent's frozen replica keeps its memory (docs/scaling.md, \"Warm and cold parking\")" }),
      warm_parked_replicas: Type.Integer({ description: "parked agents whose replica is frozen in memory now: counted in memory_mb, not in replicas, and not metered in replica_hours" }),
    }),
    period: Type.Object({
      start: Timestamp,
      replica_hours: Type.Number(),
      vcpu_hours: Type.Number(),
      memory_gb_hours: Type.Number(),
      requests: Type.Integer(),
      model_usage: ModelUsage,
    }),
  },
  { $id: 'AccountUsage', examples: [{ plan: 'free', exempt: false, limits: ex.limits, usage: { agents: 2, replicas: 2, vcpu: 1, memory_mb: 1536, warm_parked_replicas: 1 }, period: { start: '2025-12-01T00:00:00Z', replica_hours: 57.5, vcpu_hours: 28.75, memory_gb_hours: 28.75, requests: 1834, model_usage: ex.modelUsage } }] },
);
export type AccountUsage = Static<typeof AccountUsage>;

export const SubscriptionBody = Type.Object(
  { plan: StringEnum(PLAN_NAMES, { description: 'The plan to move the account to' }) },
  { additionalProperties: false, examples: [{ plan: 'pro' }] },
);
export type SubscriptionBody = Static<typeof SubscriptionBody>;

export const Subscription = Type.Object({ plan: Type.String(), limits: Limits }, { $id: 'Subscription', examples: [{ plan: 'pro', limits: ex.proLimits }] });
export type Subscription = Static<typeof Subscription>;

/** A stray or replayed DELETE /account cannot wipe an account: the caller names the one they mean. */
export const DeleteAccountBody = Type.Object(
  { confirm: Type.String({ minLength: 1, maxLength: 64, description: "The account's id (acc_…), as GET /auth/me shows it" }) },
  { additionalProperties: false, examples: [{ confirm: ex.ids.account }] },
);
export type DeleteAccountBody = Static<typeof DeleteAccountBody>;
