import type { Clock } from '../../contract/clock.js';
import { AGENT_TOKEN_PREFIX, type AgentCredential, type AgentTokens } from '../crypto/agent-token.js';
import { verifyWorkloadIdentity, type KeyLookup } from '../crypto/nomad-workload-identity.js';
import { AGENT_SERVICES_AUDIENCE } from '../orchestrator/nomad/agent-identity.js';
import { agentCredentialOf } from '../orchestrator/nomad/identity-credential.js';

/** Where Nomad's identities are checked: its signing keys, and the namespace agent jobs run in (NOMAD_NAMESPACE). */
export interface NomadIdentities {
  keys: KeyLookup;
  namespace: string;
}

/**
 * Who a bearer token at the agent services speaks for (issue 37). Each driver hands its
 * replicas one kind: podman a platform token (`ast1.…`, control/crypto/agent-token.ts),
 * Nomad the task's workload identity JWT, signed by Nomad (docs/nomad.md, "Agent
 * services"), accepted only when the driver is Nomad. Either names one agent, which then
 * scopes every request.
 */
export class ReplicaCredentials {
  constructor(
    private readonly tokens: AgentTokens,
    private readonly clock: Clock,
    private readonly nomad: NomadIdentities | null,
  ) {}

  async verify(token: string): Promise<AgentCredential | null> {
    const now = this.clock.now();
    if (token.startsWith(AGENT_TOKEN_PREFIX)) return this.tokens.verify(token, now);
    if (!this.nomad) return null;
    const identity = await verifyWorkloadIdentity(token, this.nomad.keys, { audience: AGENT_SERVICES_AUDIENCE, now });
    return identity && agentCredentialOf(identity, this.nomad.namespace);
  }
}
