import { Type, type Static } from '@sinclair/typebox';
import { Timestamp } from './common.js';

const Limits = Type.Object({
  max_agents: Type.Integer(),
  max_replicas: Type.Integer(),
  max_vcpu: Type.Number(),
  max_memory_mb: Type.Integer(),
  max_replica_cpu: Type.Number(),
  max_replica_memory_mb: Type.Integer(),
  max_agent_rpm: Type.Integer(),
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
      memory_mb: Type.Integer(),
    }),
    period: Type.Object({
      start: Timestamp,
      replica_hours: Type.Number(),
      vcpu_hours: Type.Number(),
      memory_gb_hours: Type.Number(),
      requests: Type.Integer(),
    }),
  },
  { $id: 'AccountUsage' },
);
export type AccountUsage = Static<typeof AccountUsage>;
