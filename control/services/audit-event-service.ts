import type { Knex } from 'knex';
import { PlatformError, validationError } from '../domain/errors.js';
import type { AuditEventRow } from '../repositories/audit-events.js';
import { repositoriesOn } from '../repositories/index.js';
import type { AuditEvent, AuditEventList, ListAuditEventsQuery } from '../schemas/audit.js';
import { pageEnvelope, pageWindow } from './paging.js';
import type { Principal } from './principal.js';

/** The account's audit log, read by its owners and admins (docs/audit.md). */
export class AuditEventService {
  constructor(private readonly db: Knex) {}

  async list(principal: Principal, query: ListAuditEventsQuery): Promise<AuditEventList> {
    if (principal.role !== 'owner' && principal.role !== 'admin') {
      throw new PlatformError('AUTHORISATION_DENIED', 'Only owners and admins read the audit log');
    }
    const since = query.since === undefined ? undefined : new Date(query.since);
    const until = query.until === undefined ? undefined : new Date(query.until);
    if (since && until && since >= until) {
      throw validationError([{ loc: ['query', 'until'], msg: 'must be later than since', type: 'value_error' }]);
    }
    const window = pageWindow(query);
    const { rows, total } = await repositoriesOn(this.db).auditEvents.list(
      principal.accountId,
      { action: query.action, agentId: query.agent_id, actorId: query.actor_id, since, until },
      window.offset,
      window.pageSize,
    );
    return { events: rows.map(eventView), ...pageEnvelope(window, total) };
  }
}

function eventView(row: AuditEventRow): AuditEvent {
  return {
    id: row.id,
    at: row.at.toISOString(),
    action: row.action,
    actor: { type: row.actor_type, id: row.actor_id, email: row.actor_email },
    target: { type: row.target_type, id: row.target_id },
    request_id: row.request_id,
    ip: row.ip,
    details: row.details,
  };
}
