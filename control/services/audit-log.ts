import type { AuditAction, AuditContext, AuditDetails } from '../domain/audit.js';
import { ID_PREFIX, newId } from '../crypto/tokens.js';
import type { Repositories } from '../repositories/index.js';

export interface AuditTarget {
  /** What was changed: 'agent', 'access_key', 'api_key', 'user', 'account', 'webhook', 'invite', 'session'. */
  type: string;
  id: string | null;
}

export interface AuditEntry {
  accountId: string;
  at: Date;
  action: AuditAction;
  target: AuditTarget;
  /** The agent the event is about, or whose access key it concerns: what the agent_id filter matches. */
  agentId?: string;
  /** Small and never a secret: names of changed fields, from/to of replicas or access, counts. */
  details?: AuditDetails;
}

/**
 * Records one audit event through `repos`. Call it with the repositories of the
 * transaction that makes the change (`inTransaction(db, async (repos) => …)`), after the
 * change's own writes, so the event commits with the change or not at all:
 *
 *   await recordAudit(repos, audit, { accountId, at: now, action: 'webhook.create', target: { type: 'webhook', id } });
 *
 * `audit` is the caller's context (route handlers build it with `auditContextOf`; loops
 * and the admin command pass SYSTEM_CONTEXT).
 */
export async function recordAudit(repos: Repositories, audit: AuditContext, entry: AuditEntry): Promise<void> {
  await repos.auditEvents.insert({
    id: newId(ID_PREFIX.auditEvent),
    account_id: entry.accountId,
    at: entry.at,
    action: entry.action,
    actor_type: audit.actor.type,
    actor_id: audit.actor.id,
    actor_user_id: audit.actor.userId ?? null,
    actor_email: audit.actor.email,
    target_type: entry.target.type,
    target_id: entry.target.id,
    agent_id: entry.agentId ?? null,
    request_id: audit.requestId,
    ip: audit.ip,
    details: entry.details ?? {},
  });
}
