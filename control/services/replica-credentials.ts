import type { Clock } from '../../contract/clock.js';
import { AGENT_TOKEN_PREFIX, type AgentCredential, type AgentTokens } from '../crypto/agent-token.js';
import { verifyWorkloadIdentity, type KeyLookup } from '../crypto/nomad-workload-identity.js';
import { AGENT_SERVICES_AUDIENCE } from '../orchestrator/nomad/agent-identity.js';
import type { AllocationLiveness } from '../orchestrator/nomad/allocation-liveness.js';
import { agentCredentialOf } from '../orchestrator/nomad/identity-credential.js';

/** Where Nomad's identities are checked: its signing keys, the namespace agent jobs run in (NOMAD_NAMESPACE), and whether an allocation still runs. */
export interface NomadIdentities {
  keys: KeyLookup;
  namespace: string;
  /** Asked last, of a signed identity of one of our agents: a stopped replica's JWT is refused as Nomad refuses it (allocation-liveness.ts). */
  allocationLive: AllocationLiveness;
}

/** Tokens verified and kept, at most: one per replica a copy of the control API hears from, with room. */
const KEPT_TOKENS = 4096;

/**
 * How long a verified token is taken without verifying it again, at most: within its own
 * expiry always, and within a minute, so a Nomad signing key removed from the key set
 * (which the lookup notices within 15 minutes) is not honoured a minute longer for it,
 * nor the JWT of an allocation Nomad has stopped.
 */
const KEEP_FOR_MS = 60_000;

/**
 * Who a bearer token at the agent services speaks for (issue 37). Each driver hands its
 * replicas one kind: podman a platform token (`ast1.…`, control/crypto/agent-token.ts),
 * Nomad the task's workload identity JWT, signed by Nomad (docs/nomad.md, "Agent
 * services"), accepted only when the driver is Nomad. Either names one agent, which then
 * scopes every request.
 *
 * A replica sends the same token with every call, two per invoke, until its file is
 * rewritten: a token that verified is kept (KEPT_TOKENS, the oldest dropped first) and
 * taken as is until KEEP_FOR_MS or its own expiry, whichever comes first. Only tokens that
 * verified are kept, so garbage costs a verification each time, never memory. A kept token
 * costs 0.2 to 0.4 µs of CPU where verifying one costs 3.6 µs for a platform token, 28 µs
 * for a Nomad JWT signed with RS256 and 108 µs with EdDSA (measured here, 20,000 calls each
 * after a warm-up): on Nomad, 10 to 25% of what a turn's two calls cost the control API.
 */
export class ReplicaCredentials {
  private readonly kept = new Map<string, { credential: AgentCredential; untilMs: number }>();

  constructor(
    private readonly tokens: AgentTokens,
    private readonly clock: Clock,
    private readonly nomad: NomadIdentities | null,
  ) {}

  async verify(token: string): Promise<AgentCredential | null> {
    const now = this.clock.now();
    const kept = this.kept.get(token);
    if (kept && now.getTime() < kept.untilMs) return kept.credential;
    if (kept) this.kept.delete(token);
    const verified = await this.verifyAfresh(token, now);
    if (!verified) return null;
    const credential = { agentId: verified.agentId, replicaId: verified.replicaId };
    this.keep(token, credential, Math.min(verified.validUntil.getTime(), now.getTime() + KEEP_FOR_MS));
    return credential;
  }

  private async verifyAfresh(token: string, now: Date): Promise<(AgentCredential & { validUntil: Date }) | null> {
    if (token.startsWith(AGENT_TOKEN_PREFIX)) return this.tokens.verify(token, now);
    if (!this.nomad) return null;
    const identity = await verifyWorkloadIdentity(token, this.nomad.keys, { audience: AGENT_SERVICES_AUDIENCE, now });
    const credential = identity && agentCredentialOf(identity, this.nomad.namespace);
    if (!credential || !(await this.nomad.allocationLive(identity!))) return null;
    return { ...credential, validUntil: identity!.validUntil };
  }

  private keep(token: string, credential: AgentCredential, untilMs: number): void {
    if (this.kept.size >= KEPT_TOKENS) this.kept.delete(this.kept.keys().next().value!);
    this.kept.set(token, { credential, untilMs });
  }
}
