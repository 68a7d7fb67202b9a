import { isDeepStrictEqual } from 'node:util';
import { sessionsUnavailable, sessionTooLarge } from './errors.js';
import type { Logger } from './logger.js';
import { HeldSessions } from './held-sessions.js';
import type { SessionsApi, SessionVersion, StoredSession } from './sessions-api-client.js';
import { SessionsUnavailableError, SessionTooLargeError, SessionVersionConflictError } from './sessions-api-errors.js';
import type { OpenSession, SessionStore } from './session-store.js';
import { sessionWithTurnTrimmingAhead, type SessionBounds, type SessionWithTurn } from './session-trim.js';

export interface RemoteSessionOptions<M> extends SessionBounds {
  /** Writes of one turn before giving up, the first included: conflicts and refusals as too large each cost one. */
  writeAttempts: number;
  /** Whether a message begins a turn (the user's); turns are what trimming drops. */
  startsTurn: (message: M) => boolean;
}

export const DEFAULT_WRITE_ATTEMPTS = 5;

/**
 * Conversations kept by agent services, so every replica, and this one after a restart,
 * continues them. A turn is read at one version and written at it; when another replica
 * wrote meanwhile (409) the session is read again and the turn goes after what is there
 * now. The runtime keeps each session within SESSION_MAX_BYTES and the turn limit itself,
 * dropping its oldest turns, a quarter's room more than it must (sessionWithTurnTrimmingAhead),
 * so agent services' 413 is the exception, met by trimming more.
 *
 * When agent services cannot serve, the invoke fails with SESSIONS_UNAVAILABLE rather
 * than going on without the history: an answer that silently forgets the conversation is
 * the very failure this store exists to end, and the caller can retry an error.
 */
export class RemoteSessionStore<M> implements SessionStore<M> {
  /** Whether the last read or write failed for want of agent services: then new conversations are read first too (start). */
  private failing = false;

  constructor(
    private readonly api: SessionsApi<M>,
    private readonly options: RemoteSessionOptions<M>,
    private readonly logger: Logger,
    /** What this replica wrote last of each session, so that reading it back costs a 304 (held-sessions.ts). */
    private readonly held: HeldSessions<M> = new HeldSessions(),
  ) {}

  async open(id: string): Promise<OpenSession<M>> {
    const read = await this.read(id);
    return { history: read.messages, appendTurn: (turn) => this.appendTurn(id, read, turn) };
  }

  /**
   * A new conversation's first turn costs one call, its write at version 0, which creates the
   * session. Not while agent services are failing: the read fails the invoke before its model
   * call, where a turn run first would spend a model call on an answer that could not be kept.
   */
  async start(id: string): Promise<OpenSession<M>> {
    if (this.failing) return this.open(id);
    const none: StoredSession<M> = { version: 0, messages: [] };
    return { history: none.messages, appendTurn: (turn) => this.appendTurn(id, none, turn) };
  }

  private async appendTurn(id: string, read: StoredSession<M>, turn: readonly M[]): Promise<void> {
    let base = read;
    let maxBytes = this.options.maxBytes;
    let lastFailure: unknown;
    for (let attempt = 1; attempt <= this.options.writeAttempts; attempt += 1) {
      const next = sessionWithTurnTrimmingAhead(base.messages, turn, { maxBytes, maxTurns: this.options.maxTurns }, this.options.startsTurn);
      if (next === undefined) {
        throw sessionTooLarge(`this turn alone is larger than the ${maxBytes} bytes a conversation may hold (SESSION_MAX_BYTES), so it was not kept`);
      }
      try {
        // Only the turn travels while nothing is dropped; once old turns go, the trimmed whole replaces the session.
        const written = next.dropped === 0 ? await this.api.append(id, base.version, turn) : await this.api.replace(id, base.version, next.messages);
        this.holdWritten(id, written, next, turn);
        return;
      } catch (error) {
        lastFailure = error;
        if (error instanceof SessionVersionConflictError) {
          base = await this.read(id);
        } else if (error instanceof SessionTooLargeError) {
          // Agent services measure or limit more tightly than SESSION_MAX_BYTES says: a setting to align.
          this.logger.warn('agent services refused a session within SESSION_MAX_BYTES as too large; dropping more of its oldest turns', {
            session_id: id,
            bytes: next.bytes,
            session_max_bytes: this.options.maxBytes,
          });
          maxBytes = Math.floor((next.bytes * 3) / 4);
        } else if (error instanceof SessionsUnavailableError && error.mayHaveCommitted) {
          const now = await this.read(id);
          if (now.version > base.version && endsWith(now.messages, turn)) return;
          base = now;
        } else {
          throw this.unavailable(id, error);
        }
      }
    }
    throw this.unavailable(
      id,
      lastFailure instanceof SessionsUnavailableError
        ? lastFailure
        : new SessionsUnavailableError(`${this.options.writeAttempts} writes of this turn in a row met another replica's write or a refusal as too large`, false),
    );
  }

  private async read(id: string): Promise<StoredSession<M>> {
    const session = await this.api.get(id, this.held.get(id)).catch((error: unknown) => {
      throw this.unavailable(id, error);
    });
    this.failing = false;
    return session;
  }

  /**
   * Holds the session as agent services now have it: what was there and the turn, as the
   * JSON they stored it as, so that a later 304 gives exactly what another replica would read.
   */
  private holdWritten(id: string, written: SessionVersion, next: SessionWithTurn<M>, turn: readonly M[]): void {
    const kept = next.messages.slice(0, next.messages.length - turn.length);
    const stored = JSON.parse(JSON.stringify(turn)) as M[];
    this.held.hold(id, { ...written, messages: [...kept, ...stored] }, next.bytes);
    this.failing = false;
  }

  /** The caller's error for agent services failing, logged for operators (the reason holds no token and no user text). */
  private unavailable(id: string, error: unknown): unknown {
    if (!(error instanceof SessionsUnavailableError)) return error;
    this.failing = true;
    this.logger.warn('agent services could not serve a session', { session_id: id, reason: error.message });
    return sessionsUnavailable(`the conversation could not be read or kept: ${error.message}`, error);
  }
}

/** Whether `messages` end with `turn`, compared as the JSON they were stored as. */
function endsWith<M>(messages: readonly M[], turn: readonly M[]): boolean {
  if (messages.length < turn.length) return false;
  const stored = JSON.parse(JSON.stringify(turn)) as unknown;
  return isDeepStrictEqual(messages.slice(messages.length - turn.length), stored);
}
