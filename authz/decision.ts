/** What authz decided about one request; check-response.ts turns it into Envoy's answer. */
export type Decision =
  | { outcome: 'allowed'; agentId: string; upstream: string }
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
