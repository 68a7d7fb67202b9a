import type { Knex } from 'knex';
import type { AuditAction, AuditActorType, AuditDetails } from '../domain/audit.js';
import { pageOf, type Page } from './page.js';

export interface AuditEventRow {
  id: string;
  account_id: string;
  at: Date;
  action: AuditAction;
  actor_type: AuditActorType;
  actor_id: string | null;
  actor_user_id: string | null;
  actor_email: string | null;
  target_type: string;
  target_id: string | null;
  agent_id: string | null;
  request_id: string | null;
  ip: string | null;
  details: AuditDetails;
}

export interface AuditEventFilter {
  action?: AuditAction;
  /** Events about the agent and about its access keys. */
  agentId?: string;
  /** Events by this actor; a user id also matches what the user did through their API keys. */
  actorId?: string;
  since?: Date;
  until?: Date;
}

/** Rows removed per prune statement, so one pass never holds a long lock or outlives statement_timeout. */
const PRUNE_BATCH = 5_000;

export class AuditEventRepository {
  constructor(private readonly db: Knex) {}

  /** `seq` is Postgres's to number. */
  async insert(row: AuditEventRow): Promise<void> {
    await this.db('audit_events').insert({ ...row, details: JSON.stringify(row.details) });
  }

  /** Newest first (by time, then by insertion); `since` is inclusive, `until` exclusive. */
  async list(accountId: string, filter: AuditEventFilter, offset: number, limit: number): Promise<Page<AuditEventRow>> {
    const scoped = this.db<AuditEventRow>('audit_events').where({ account_id: accountId });
    if (filter.action) scoped.andWhere({ action: filter.action });
    if (filter.agentId) scoped.andWhere({ agent_id: filter.agentId });
    if (filter.actorId) {
      const actorId = filter.actorId;
      scoped.andWhere((q) => q.where({ actor_id: actorId }).orWhere({ actor_user_id: actorId }));
    }
    if (filter.since) scoped.andWhere('at', '>=', filter.since);
    if (filter.until) scoped.andWhere('at', '<', filter.until);
    return pageOf(scoped, [{ column: 'at', order: 'desc' }, { column: 'seq', order: 'desc' }], offset, limit);
  }

  /** Deletes every event older than `cutoff`, in batches; returns how many went. */
  async deleteBefore(cutoff: Date): Promise<number> {
    let removed = 0;
    for (;;) {
      const batch = this.db('audit_events').select('id').where('at', '<', cutoff).limit(PRUNE_BATCH);
      const count = await this.db('audit_events').whereIn('id', batch).delete();
      removed += count;
      if (count < PRUNE_BATCH) return removed;
    }
  }
}
