import type { ReplicaMetrics } from '../types.js';
import type { AllocResourceUsage } from './api-types.js';

/**
 * One allocation's stats as our metrics. Nomad's CpuStats.Percent is a percent of one
 * core, as podman's cpu_percent is, so it passes unchanged; memory is RSS (what the
 * OOM killer counts), falling back to Usage where the driver reports no RSS (cgroup v2).
 */
export function metricsFrom(replicaId: string, usage: AllocResourceUsage, memoryLimitMb: number): ReplicaMetrics {
  const memory = usage.ResourceUsage.MemoryStats;
  return {
    replicaId,
    cpuPercent: usage.ResourceUsage.CpuStats.Percent,
    memoryMb: (memory.RSS || memory.Usage || 0) / (1024 * 1024),
    memoryLimitMb,
  };
}
