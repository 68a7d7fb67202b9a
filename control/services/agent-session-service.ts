import type { Knex } from 'knex';
import type { Clock } from '../../contract/clock.js';
import type { SecretBox } from '../crypto/secret-box.js';
import {
  appendedJson,
  expiryAfter,
  isLive,
  jsonBytes,
  sessionNotFound,
  sessionTooLarge,
  versionConflict,
  type AgentSessionRow,
  type SessionLimits,
} from '../domain/agent-session.js';
import { sessionTtlSeconds } from '../domain/deploy.js';
import { PlatformError } from '../domain/errors.js';
import type { AgentRow } from '../domain/agent.js';
import { inTransaction, repositoriesOn, type Repositories } from '../repositories/index.js';
import type { SessionWritten } from '../schemas/agent-sessions.js';
import type { FixedWindowLimiter } from './rate-limiter.js';

export interface AgentSessionDependencies {
  db: Knex;
  box: SecretBox;
  clock: Clock;
  limiter: FixedWindowLimiter;
  limits: SessionLimits;
}

/** A session as read: its messages as the JSON text they were stored as, for the transport to send without parsing them. */
export interface SessionContents extends SessionWritten {
  messagesJson: string;
}

/** What a write makes of a session's messages: from the JSON array it holds ('[]' when new) and its message count. */
interface MessageChange {
  json(current: string): string;
  count(current: number): number;
}

const SECOND_MS = 1000;

/**
 * The sessions an agent keeps through the agent services endpoint (issue 37), called with
 * the agent its replica's token names: every method is scoped to that agent, so one agent
 * never reaches another's session, whatever id it sends.
 *
 * Every write runs in one transaction holding the session's row lock, so concurrent writes
 * of one session take turns and each sees the version the previous one left: versions
 * never skip or repeat, and of two writers expecting the same version exactly one wins.
 * Messages are opaque and sealed; nothing here logs them.
 */
export class AgentSessionService {
  constructor(private readonly deps: AgentSessionDependencies) {}

  /** The live session, its last use and expiry moved to now. */
  async get(agentId: string, sessionId: string): Promise<SessionContents> {
    const repos = repositoriesOn(this.deps.db);
    const now = this.deps.clock.now();
    const agent = await this.agentOf(repos.agents.findAny(agentId));
    const row = await repos.agentSessions.touch(agentId, sessionId, now, expiryAfter(now, sessionTtlSeconds(agent.deploy)));
    if (!row) throw sessionNotFound();
    return { ...writtenView(row), messagesJson: this.deps.box.open(row.messages_sealed) };
  }

  /** Adds `messages` after the session's own; expected version 0 creates it. */
  append(agentId: string, sessionId: string, expectedVersion: number, messages: unknown[]): Promise<SessionWritten> {
    const added = JSON.stringify(messages);
    return this.write(agentId, sessionId, expectedVersion, { json: (current) => appendedJson(current, added), count: (current) => current + messages.length });
  }

  /** Puts `messages` in place of all the session's (the runtime drops its oldest turns this way); expected version 0 creates it. */
  replace(agentId: string, sessionId: string, expectedVersion: number, messages: unknown[]): Promise<SessionWritten> {
    const json = JSON.stringify(messages);
    return this.write(agentId, sessionId, expectedVersion, { json: () => json, count: () => messages.length });
  }

  async delete(agentId: string, sessionId: string): Promise<void> {
    await this.assertUnderWriteRate(agentId);
    const repos = repositoriesOn(this.deps.db);
    await this.agentOf(repos.agents.findAny(agentId));
    const expiresAt = await repos.agentSessions.delete(agentId, sessionId);
    // An expired row was gone already for every reader: deleting it is the sweep's work done early, still a 404.
    if (!expiresAt || !isLive({ expires_at: expiresAt }, this.deps.clock.now())) throw sessionNotFound();
  }

  private async write(agentId: string, sessionId: string, expectedVersion: number, change: MessageChange): Promise<SessionWritten> {
    await this.assertUnderWriteRate(agentId);
    const { box, clock, limits } = this.deps;
    return inTransaction(this.deps.db, async (repos) => {
      // Key-shared, so the agent cannot be deleted under the write and the session's foreign key always holds.
      const agent = await this.agentOf(repos.agents.findAnyKeyShared(agentId));
      const stored = await this.lockSession(repos, agentId, sessionId);
      const now = clock.now();
      const live = stored && isLive(stored, now) ? stored : undefined;
      const currentVersion = live?.version ?? 0;
      if (expectedVersion !== currentVersion) throw versionConflict(expectedVersion, currentVersion);
      const json = change.json(live ? box.open(live.messages_sealed) : '[]');
      const size = jsonBytes(json);
      if (size > limits.maxBytes) throw sessionTooLarge(size, limits.maxBytes);
      const row: AgentSessionRow = {
        agent_id: agentId,
        session_id: sessionId,
        version: currentVersion + 1,
        messages_sealed: box.seal(json),
        size_bytes: size,
        message_count: change.count(live?.message_count ?? 0),
        // An expired row is a session gone: writing the id again starts a new one in its place.
        created_at: live?.created_at ?? now,
        last_used_at: now,
        expires_at: expiryAfter(now, sessionTtlSeconds(agent.deploy)),
      };
      if (stored) {
        await repos.agentSessions.update(row);
      } else {
        await this.makeRoom(repos, agentId);
        await repos.agentSessions.insert(row);
      }
      return writtenView(row);
    });
  }

  /**
   * The session's row, locked. When there is none yet, the write may create it: it first
   * takes the agent's creation turn, then looks again, as a creator of the same id may
   * have committed while it waited (its write then meets that session's version).
   */
  private async lockSession(repos: Repositories, agentId: string, sessionId: string): Promise<AgentSessionRow | undefined> {
    const found = await repos.agentSessions.findForUpdate(agentId, sessionId);
    if (found) return found;
    await repos.agentSessions.lockCreations(agentId);
    return repos.agentSessions.findForUpdate(agentId, sessionId);
  }

  /** At SESSIONS_MAX_PER_AGENT, the least recently used go, in the creating write's transaction. */
  private async makeRoom(repos: Repositories, agentId: string): Promise<void> {
    const excess = (await repos.agentSessions.countForAgent(agentId)) - this.deps.limits.maxPerAgent + 1;
    if (excess > 0) await repos.agentSessions.evictLeastRecentlyUsed(agentId, excess);
  }

  /** Fixed one-second windows in Redis, shared by every copy of the control API, as the edge counts its limits. */
  private async assertUnderWriteRate(agentId: string): Promise<void> {
    const { writesPerSecond } = this.deps.limits;
    const decision = await this.deps.limiter.hit(`agent-sessions:${agentId}`, writesPerSecond, SECOND_MS);
    if (decision.allowed) return;
    throw new PlatformError('SESSION_RATE_LIMITED', `The agent writes sessions more than ${writesPerSecond} times a second; retry in ${decision.retryAfterSeconds} s`, {
      retry_after: decision.retryAfterSeconds,
    });
  }

  /** A token outlives the agent it was issued for by up to its TTL: then it authenticates nothing. */
  private async agentOf(found: Promise<AgentRow | undefined>): Promise<AgentRow> {
    const agent = await found;
    if (!agent) throw new PlatformError('UNAUTHENTICATED', 'The agent this token was issued for no longer exists');
    return agent;
  }
}

function writtenView(row: AgentSessionRow): SessionWritten {
  return { session_id: row.session_id, version: row.version, size_bytes: row.size_bytes, expires_at: row.expires_at.toISOString() };
}
