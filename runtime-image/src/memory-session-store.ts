import type { Clock } from './clock.js';
import type { OpenSession, SessionStore } from './session-store.js';

export interface SessionLimits {
  /** A session unused for this long is forgotten. */
  idleTtlMs: number;
  /** Past this many sessions the least recently used is forgotten. */
  maxSessions: number;
  /** Past this many turns in a session its oldest turn is dropped. */
  maxTurnsPerSession: number;
  /** Characters of history (JSON-measured) kept across all sessions. */
  historyBudgetChars: number;
}

interface Turn<M> {
  messages: readonly M[];
  chars: number;
}

interface Session<M> {
  turns: Turn<M>[];
  chars: number;
  lastUsedAt: number;
}

/**
 * Conversation history in this replica's memory, bounded by idle time, session
 * count, turns per session and total characters, so memory stays flat whatever
 * callers do. Used only when the platform gives no agent services: another
 * replica, or this one after a restart, does not know these conversations.
 *
 * The Map's iteration order is its recency order: a session is re-inserted
 * whenever it is used, so the first entry is always the least recently used,
 * and expiry and eviction only ever look at the front.
 */
export class MemorySessionStore<M> implements SessionStore<M> {
  private readonly sessions = new Map<string, Session<M>>();
  private totalChars = 0;

  constructor(
    private readonly limits: SessionLimits,
    private readonly clock: Clock,
  ) {}

  async open(id: string): Promise<OpenSession<M>> {
    return { history: this.history(id), appendTurn: async (messages) => this.appendTurn(id, messages) };
  }

  async start(id: string): Promise<OpenSession<M>> {
    return { history: [], appendTurn: async (messages) => this.appendTurn(id, messages) };
  }

  /** The messages of a session, oldest first; empty for an unknown or expired one. */
  history(id: string): M[] {
    this.dropExpired();
    const session = this.sessions.get(id);
    if (session === undefined) return [];
    this.touch(id, session);
    return session.turns.flatMap((turn) => turn.messages);
  }

  /** Adds one turn (a user message and what followed it) to a session, creating the session if needed. */
  appendTurn(id: string, messages: readonly M[]): void {
    this.dropExpired();
    const session = this.sessions.get(id) ?? { turns: [], chars: 0, lastUsedAt: 0 };
    const chars = JSON.stringify(messages).length;
    session.turns.push({ messages, chars });
    session.chars += chars;
    this.totalChars += chars;
    this.touch(id, session);
    while (session.turns.length > this.limits.maxTurnsPerSession) this.dropOldestTurn(session);
    this.evictOthersUntilWithinBounds(id);
    // A single session larger than the whole budget keeps only its latest turns.
    while (this.totalChars > this.limits.historyBudgetChars && session.turns.length > 1) this.dropOldestTurn(session);
  }

  get size(): number {
    return this.sessions.size;
  }

  get historyChars(): number {
    return this.totalChars;
  }

  private touch(id: string, session: Session<M>): void {
    session.lastUsedAt = this.clock.now();
    this.sessions.delete(id);
    this.sessions.set(id, session);
  }

  private dropExpired(): void {
    const oldestAllowed = this.clock.now() - this.limits.idleTtlMs;
    for (const [id, session] of this.sessions) {
      if (session.lastUsedAt > oldestAllowed) return;
      this.forget(id, session);
    }
  }

  private evictOthersUntilWithinBounds(keepId: string): void {
    for (const [id, session] of this.sessions) {
      const overBounds = this.sessions.size > this.limits.maxSessions || this.totalChars > this.limits.historyBudgetChars;
      if (!overBounds || id === keepId) return;
      this.forget(id, session);
    }
  }

  private dropOldestTurn(session: Session<M>): void {
    const oldest = session.turns.shift();
    if (oldest === undefined) return;
    session.chars -= oldest.chars;
    this.totalChars -= oldest.chars;
  }

  private forget(id: string, session: Session<M>): void {
    this.sessions.delete(id);
    this.totalChars -= session.chars;
  }
}
