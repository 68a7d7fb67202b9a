import { quotaExceeded } from '../domain/errors.js';
import type { PlanLimits } from '../domain/plans.js';
import type { AccountFootprint } from '../repositories/agents.js';

/** What a change would add to the account: new agents, and replicas of one shape. */
export interface FootprintChange {
  agents: number;
  replicas: number;
  replicaCpu: number;
  replicaMemoryMb: number;
}

/**
 * Throws QUOTA_EXCEEDED for the first limit the change would pass. `current` must have
 * been read under the account's row lock, so parallel requests cannot both slip in.
 * Exactly at a limit passes; one over fails.
 */
export function assertWithinLimits(limits: PlanLimits, current: AccountFootprint, change: FootprintChange): void {
  if (change.replicaCpu > limits.max_replica_cpu) {
    throw quotaExceeded('max_replica_cpu', limits.max_replica_cpu, change.replicaCpu);
  }
  if (change.replicaMemoryMb > limits.max_replica_memory_mb) {
    throw quotaExceeded('max_replica_memory_mb', limits.max_replica_memory_mb, change.replicaMemoryMb);
  }
  const agents = current.agents + change.agents;
  if (change.agents > 0 && agents > limits.max_agents) {
    throw quotaExceeded('max_agents', limits.max_agents, agents);
  }
  if (change.replicas <= 0) return;
  const replicas = current.replicas + change.replicas;
  if (replicas > limits.max_replicas) throw quotaExceeded('max_replicas', limits.max_replicas, replicas);
  const vcpu = roundCpu(current.vcpu + change.replicas * change.replicaCpu);
  if (vcpu > limits.max_vcpu) throw quotaExceeded('max_vcpu', limits.max_vcpu, vcpu);
  const memory = current.memory_mb + change.replicas * change.replicaMemoryMb;
  if (memory > limits.max_memory_mb) throw quotaExceeded('max_memory_mb', limits.max_memory_mb, memory);
}

/** vCPU sums are compared at 1/1000 precision so 0.1 × 30 counts as 3, not 3.0000000000000004. */
const roundCpu = (value: number) => Math.round(value * 1000) / 1000;
