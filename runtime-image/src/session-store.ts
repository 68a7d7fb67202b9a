/**
 * Where conversations are kept: agent services, shared by every replica
 * (remote-session-store.ts), or this replica's memory (memory-session-store.ts).
 * The invoke path sees only this, so it cannot tell which one it has.
 */
export interface SessionStore<M> {
  /** Reads a session to run one turn on; an unknown id is an empty session. */
  open(id: string): Promise<OpenSession<M>>;
  /**
   * A session under an id this replica just made up (a random UUID), to run its first turn
   * on: empty, and as a rule read from nowhere, since no one can have written it. Its turn is
   * kept as `open`'s would be, after whatever the session holds by then.
   */
  start(id: string): Promise<OpenSession<M>>;
}

/** A session as one invoke read it. */
export interface OpenSession<M> {
  /** Its messages, oldest first. */
  readonly history: readonly M[];
  /**
   * Keeps one turn (the user's message and what followed it) after whatever the
   * session holds by now, which may be more than `history` if another replica
   * wrote meanwhile. Rejects when the turn could not be kept.
   */
  appendTurn(messages: readonly M[]): Promise<void>;
}
