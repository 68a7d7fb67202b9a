/** The quota figures of `GET /account/usage`'s `limits` object (README, "Plans"). */
export interface PlanLimits {
  max_agents: number;
  max_replicas: number;
  max_vcpu: number;
  max_memory_mb: number;
  max_replica_cpu: number;
  max_replica_memory_mb: number;
  max_agent_rpm: number;
  /** Custom domains (issue 34) across all of the account's agents. */
  max_custom_domains: number;
}

export type PlanName = 'free' | 'pro';

export const PLAN_NAMES: readonly PlanName[] = ['free', 'pro'];

export const PLAN_LIMITS: Readonly<Record<PlanName, Readonly<PlanLimits>>> = {
  free: {
    max_agents: 10,
    max_replicas: 3,
    max_vcpu: 3,
    max_memory_mb: 3072,
    max_replica_cpu: 1,
    max_replica_memory_mb: 1024,
    max_agent_rpm: 300,
    max_custom_domains: 1,
  },
  pro: {
    max_agents: 100,
    max_replicas: 50,
    max_vcpu: 50,
    max_memory_mb: 102_400,
    max_replica_cpu: 4,
    max_replica_memory_mb: 8192,
    max_agent_rpm: 3000,
    max_custom_domains: 20,
  },
};

export function limitsOf(plan: string): PlanLimits {
  return PLAN_LIMITS[plan as PlanName] ?? PLAN_LIMITS.free;
}

export const isPlanName = (value: string): value is PlanName => (PLAN_NAMES as readonly string[]).includes(value);
