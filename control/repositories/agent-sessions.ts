import type { Knex } from 'knex';
import type { AgentSessionRow, SessionSummary } from '../domain/agent-session.js';
import { pageOf, type Page } from './page.js';

/** First key of the advisory lock that makes one agent's session creations take turns (loop-locks.ts has "agn"). */
const CREATION_LOCK_NAMESPACE = 0x61_67_73; // "ags"

const SUMMARY_COLUMNS = ['agent_id', 'session_id', 'version', 'size_bytes', 'message_count', 'created_at', 'last_used_at', 'expires_at'] as const;

/**
 * Agents' conversation sessions (migration 010). Every method names the agent: a session id
 * means nothing without it. Expiry is the caller's to judge (isLive), by its clock.
 */
export class AgentSessionRepository {
  constructor(private readonly db: Knex) {}

  /** The session's row, locked until the transaction ends, so writers of one session take turns; expired or not. */
  async findForUpdate(agentId: string, sessionId: string): Promise<AgentSessionRow | undefined> {
    return this.db<AgentSessionRow>('agent_sessions').where({ agent_id: agentId, session_id: sessionId }).forUpdate().first();
  }

  /**
   * Makes creations of the agent's sessions take turns until the transaction ends, so that
   * counting its sessions and evicting to make room is exact, and two creators of one new
   * id meet here rather than at the primary key.
   */
  async lockCreations(agentId: string): Promise<void> {
    await this.db.raw('SELECT pg_advisory_xact_lock(?, hashtext(?))', [CREATION_LOCK_NAMESPACE, agentId]);
  }

  /** A live session's row with its last use and expiry moved; undefined when there is none live at `now`. */
  async touch(agentId: string, sessionId: string, now: Date, expiresAt: Date): Promise<AgentSessionRow | undefined> {
    const [row] = await this.db<AgentSessionRow>('agent_sessions')
      .where({ agent_id: agentId, session_id: sessionId })
      .andWhere('expires_at', '>', now)
      .update({ last_used_at: now, expires_at: expiresAt }, '*');
    return row as AgentSessionRow | undefined;
  }

  async insert(row: AgentSessionRow): Promise<void> {
    await this.db('agent_sessions').insert(row);
  }

  /** Rewrites a locked session's messages and bookkeeping (created_at too: an expired row is reused as a new session). */
  async update(row: AgentSessionRow): Promise<void> {
    const { agent_id, session_id, ...changes } = row;
    await this.db('agent_sessions').where({ agent_id, session_id }).update(changes);
  }

  /** The deleted row's expiry (a caller treats an expired one as absent), or undefined when there was none. */
  async delete(agentId: string, sessionId: string): Promise<Date | undefined> {
    const [row] = await this.db('agent_sessions').where({ agent_id: agentId, session_id: sessionId }).delete().returning('expires_at');
    return row?.expires_at;
  }

  async countForAgent(agentId: string): Promise<number> {
    const row = await this.db('agent_sessions').where({ agent_id: agentId }).count({ count: '*' }).first();
    return Number(row?.count ?? 0);
  }

  /**
   * Deletes the agent's `count` least recently used sessions. A session another request
   * holds is being used right now, so it is skipped for the next one rather than waited for.
   */
  async evictLeastRecentlyUsed(agentId: string, count: number): Promise<number> {
    return this.db('agent_sessions')
      .whereIn(
        ['agent_id', 'session_id'],
        this.db('agent_sessions').select('agent_id', 'session_id').where({ agent_id: agentId }).orderBy([{ column: 'last_used_at' }, { column: 'session_id' }]).limit(count).forUpdate().skipLocked(),
      )
      .delete();
  }

  /** The agent's live sessions, most recently used first, without their messages. */
  async listLive(agentId: string, now: Date, offset: number, limit: number): Promise<Page<SessionSummary>> {
    // Never the messages: a page of sealed sessions would be megabytes read for nothing.
    const live = this.db<SessionSummary>('agent_sessions').where({ agent_id: agentId }).andWhere('expires_at', '>', now);
    return pageOf(live, [{ column: 'last_used_at', order: 'desc' }, { column: 'session_id', order: 'asc' }], offset, limit, SUMMARY_COLUMNS);
  }

  /** Deletes up to `limit` sessions expired at `now` (any agent's); how many went. Rows a writer holds wait for the next batch. */
  async deleteExpired(now: Date, limit: number): Promise<number> {
    return this.db('agent_sessions')
      .whereIn(['agent_id', 'session_id'], this.db('agent_sessions').select('agent_id', 'session_id').where('expires_at', '<=', now).limit(limit).forUpdate().skipLocked())
      .delete();
  }
}
