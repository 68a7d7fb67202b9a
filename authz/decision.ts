/** What authz decided about one request; check-response.ts turns it into Envoy's answer. */
export type Decision =
  | { outcome: 'allowed'; agentId: string; upstream: string }
  | { outcome: 'unknown_agent' }
  | { outcome: 'caller_rate_limited'; retryAfterSeconds: number }
  | { outcome: 'invalid_key' }
  | { outcome: 'agent_rate_limited'; retryAfterSeconds: number }
  | { outcome: 'no_replica' }
  /** Redis failed or missed its deadline: fail closed. */
  | { outcome: 'unavailable' }
  /** More Checks waiting than authz queues (AUTHZ_MAX_QUEUED): shed without asking Redis. */
  | { outcome: 'overloaded'; retryAfterSeconds: number };

export type Outcome = Decision['outcome'];
