import type { AgentCredential } from '../../crypto/agent-token.js';
import type { WorkloadIdentity } from '../../crypto/nomad-workload-identity.js';
import { agentIdOf, TASK } from './job-spec.js';

/**
 * The agent a verified identity speaks for, or null when it names none of ours: its job
 * must be in the agents' namespace (NOMAD_NAMESPACE: whoever may submit jobs elsewhere
 * gets nothing) and named `agent-<agent id>` (job-spec.ts, `jobId`), and it must be the
 * agent task's. The replica is the allocation, as the driver names replicas.
 */
export function agentCredentialOf(identity: WorkloadIdentity, namespace: string): AgentCredential | null {
  if (identity.namespace !== namespace || identity.task !== TASK) return null;
  const agentId = agentIdOf(identity.jobId);
  return agentId ? { agentId, replicaId: identity.allocationId } : null;
}
