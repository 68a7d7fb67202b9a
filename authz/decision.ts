/** What authz decided about one request; check-response.ts turns it into Envoy's answer. */
export type Decision =
  /** `version`: the stable version's replicas, or a running canary's (issue 36). */
  | { outcome: 'allowed'; agentId: string; upstream: string; version: 'stable' | 'canary' }
  | { outcome: 'unknown_agent' }
  | { outcome: 'caller_rate_limited'; retryAfterSeconds: number }
  | { outcome: 'invalid_key' }
  | { outcome: 'agent_rate_limited'; retryAfterSeconds: number }
  | { outcome: 'no_replica' }
  /** A parked agent's wake failed (the plan has no room): `body` says why, naming the quota. */
  | { outcome: 'wake_refused'; body: string }
  /** A parked agent had no routable replica within WAKE_TIMEOUT_SECONDS. */
  | { outcome: 'wake_timeout'; retryAfterSeconds: number }
  /** Redis failed or missed its deadline: fail closed. */
  | { outcome: 'unavailable' }
  /**
   * An ACME HTTP-01 challenge the control API has a pending order for: the edge answers 200
   * with the key authorization itself (RFC 8555 §8.3), whatever the Host; no agent, no limit.
   */
  | { outcome: 'acme_challenge'; keyAuthorization: string }
  /** A challenge path with no such token stored (expired, answered, never issued): 404. */
  | { outcome: 'unknown_challenge' }
  /** More Checks waiting than authz queues (AUTHZ_MAX_QUEUED): shed without asking Redis. */
  | { outcome: 'overloaded'; retryAfterSeconds: number };

export type Outcome = Decision['outcome'];

/**
 * The Check script found a parked agent (wakeable, no replica) after every other check
 * passed: authz/wake-waiter.ts holds the Check until it has a replica. `requested`: this
 * Check set the wake key, so it queues the wake for the control API.
 */
export interface Parked {
  outcome: 'parked';
  agentId: string;
  slug: string;
  requested: boolean;
}

/** What the checker answers: a decision, or a parked agent to wait for. */
export type CheckResult = Decision | Parked;
