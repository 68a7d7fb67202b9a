import type { Logger } from 'pino';
import type { WorkloadIdentity } from '../../crypto/nomad-workload-identity.js';
import type { AllocationListStub } from './api-types.js';
import { nomadClient } from './http-client.js';
import type { NomadSettings } from './settings.js';

/** Whether the allocation a verified identity names still runs, as Nomad itself decides it. */
export type AllocationLiveness = (identity: WorkloadIdentity) => Promise<boolean>;

/** What GET /v1/allocation/:id answers that is read here: the allocation, with the job it runs. */
type Allocation = Pick<AllocationListStub, 'ID' | 'JobID' | 'ClientStatus'> & { Namespace: string; Job: object | null };

/** nomad/structs/alloc.go, `terminalAllocationStatuses`, which `Allocation.ClientTerminalStatus` reads. */
const TERMINAL = new Set(['complete', 'failed', 'lost']);

/**
 * Nomad's last step in accepting one of its workload identities, which a signature and an
 * expiry do not cover: nomad/auth/auth.go, `verifyWorkloadIdentityClaim`, refuses the
 * claims of an allocation that no longer exists (or has no job) and treats those of a
 * terminal one (`alloc.ClientTerminalStatus()`) as expired. Without it, a replica Nomad has
 * stopped kept reaching its agent's sessions with its last JWT until that expired, up to
 * AGENT_SERVICES_TOKEN_TTL_SECONDS later.
 *
 * Asked of NOMAD_ADDR, GET /v1/allocation/:id (command/agent/alloc_endpoint.go, `allocGet`:
 * 404 "alloc not found"; nomad/alloc_endpoint.go, `Alloc.GetAlloc`, needs read-job in the
 * allocation's namespace, which NOMAD_TOKEN has). The allocation must also be of the job and
 * namespace the claims name. A Nomad that does not answer, or answers anything else, gets the
 * identity refused, as Nomad refuses it when its own state cannot be read: the caller is told
 * 401 and sends the token again. ReplicaCredentials asks once per token a minute at most.
 * A replica's request waits on this, so it gets the key set's budget: two attempts of two
 * seconds, on two connections of its own.
 */
export function nomadAllocationLiveness(settings: Pick<NomadSettings, 'nomad'>, logger: Logger): AllocationLiveness {
  const client = nomadClient(settings.nomad, 2_000, 2, 2);
  let failing = false;
  return async (identity) => {
    let allocation: Allocation | null;
    try {
      allocation = await client.json<Allocation | null>('GET', `/v1/allocation/${encodeURIComponent(identity.allocationId)}`, { allowNotFound: true });
    } catch (error) {
      // Said once per outage, not once per replica's request.
      if (!failing) logger.warn({ err: error }, `could not read an allocation from Nomad (${settings.nomad.address}): the workload identities of replicas not verified in the last minute are refused until it answers`);
      failing = true;
      return false;
    }
    failing = false;
    return (
      allocation !== null &&
      allocation.Job !== null &&
      allocation.ID === identity.allocationId &&
      allocation.Namespace === identity.namespace &&
      allocation.JobID === identity.jobId &&
      !TERMINAL.has(allocation.ClientStatus)
    );
  };
}
