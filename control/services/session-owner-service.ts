import type { Knex } from 'knex';
import type { Clock } from '../../contract/clock.js';
import type { SecretBox } from '../crypto/secret-box.js';
import { isLive, openedMessages, sessionNotFound, type SessionSummary as SessionRow } from '../domain/agent-session.js';
import { PlatformError } from '../domain/errors.js';
import { canWrite } from '../domain/roles.js';
import type { AuditContext } from '../domain/audit.js';
import { inTransaction, repositoriesOn } from '../repositories/index.js';
import type { ListSessionsQuery, SessionSummary, SessionWithMessages } from '../schemas/agent-sessions.js';
import { recordAudit } from './audit-log.js';
import { pageEnvelope, pageWindow, type PageEnvelope } from './paging.js';
import type { Principal } from './principal.js';
import { assertAgentOf } from './agent-of-account.js';

/**
 * What an agent's owner sees and does of its sessions (issue 37): which there are, how big
 * and how recently used, but not what they hold; one session's messages when asked for by
 * name, audited; and deleting one. Viewers are refused the delete by the route
 * (`writes: true`), and the messages here.
 */
export class SessionOwnerService {
  constructor(private readonly db: Knex, private readonly clock: Clock, private readonly box: SecretBox) {}

  /** Live sessions, the most recently used first. */
  async list(principal: Principal, agentId: string, query: ListSessionsQuery): Promise<{ sessions: SessionSummary[] } & PageEnvelope> {
    const repos = repositoriesOn(this.db);
    await assertAgentOf(repos, principal, agentId);
    const window = pageWindow(query);
    const page = await repos.agentSessions.listLive(agentId, this.clock.now(), window.offset, window.pageSize);
    return { sessions: page.rows.map(summaryView), ...pageEnvelope(window, page.total) };
  }

  /**
   * One live session with its messages, to debug a conversation. Messages are the agent's
   * callers' data: viewers see sizes and use only, and each read is audited (session.read).
   * It is no use of the session: its expiry stays where the agent's last use put it.
   */
  async read(principal: Principal, audit: AuditContext, agentId: string, sessionId: string): Promise<SessionWithMessages> {
    // The roles that operate agents (canWrite): a viewer sees sessions' sizes and use only.
    if (!canWrite(principal.role)) throw new PlatformError('AUTHORISATION_DENIED', "Viewers see an agent's sessions, their sizes and use, but not their messages");
    return inTransaction(this.db, async (repos) => {
      await assertAgentOf(repos, principal, agentId);
      const now = this.clock.now();
      const session = await repos.agentSessions.findLive(agentId, sessionId, now);
      if (!session) throw sessionNotFound();
      const messages = JSON.parse(openedMessages((sealed) => this.box.open(sealed), session)) as unknown[];
      await recordAudit(repos, audit, { accountId: principal.accountId, at: now, action: 'session.read', target: { type: 'agent_session', id: sessionId }, agentId });
      return { ...summaryView(session), messages };
    });
  }

  async delete(principal: Principal, audit: AuditContext, agentId: string, sessionId: string): Promise<void> {
    await inTransaction(this.db, async (repos) => {
      await assertAgentOf(repos, principal, agentId);
      const now = this.clock.now();
      const expiresAt = await repos.agentSessions.delete(agentId, sessionId);
      // Rolled back with the 404: an expired session is left to the sweep.
      if (!expiresAt || !isLive({ expires_at: expiresAt }, now)) throw sessionNotFound();
      await recordAudit(repos, audit, { accountId: principal.accountId, at: now, action: 'session.delete', target: { type: 'agent_session', id: sessionId }, agentId });
    });
  }
}

const summaryView = (row: SessionRow): SessionSummary => ({
  session_id: row.session_id,
  version: row.version,
  size_bytes: row.size_bytes,
  message_count: row.message_count,
  created_at: row.created_at.toISOString(),
  last_used_at: row.last_used_at.toISOString(),
  expires_at: row.expires_at.toISOString(),
});
