import type { Knex } from 'knex';
import type { WebhookEventType } from '../domain/webhooks.js';

/** The channel a committed outbox insert is announced on (NOTIFY is sent at commit, never for a rolled-back one). */
export const OUTBOX_CHANNEL = 'webhook_outbox';

export interface OutboxEvent {
  accountId: string;
  eventId: string;
  type: WebhookEventType;
  body: string;
  at: Date;
}

/** One event for one webhook, claimed for an attempt. */
export interface ClaimedDelivery {
  id: string;
  webhook_id: string;
  url: string;
  secret_sealed: string;
  event_id: string;
  event_type: WebhookEventType;
  body: string;
  /** This attempt's number, from 1. */
  attempt: number;
  created_at: Date;
}

/** The durable queue of webhook deliveries (docs/webhooks.md, "Delivery"). */
export class WebhookOutboxRepository {
  constructor(private readonly db: Knex) {}

  /**
   * One row per webhook of the account that subscribes to the event, due at once; nothing
   * when none does. Call it with the transaction that causes the event.
   */
  async enqueue(event: OutboxEvent): Promise<number> {
    const inserted = await this.db.raw(
      `INSERT INTO webhook_outbox (webhook_id, event_id, event_type, body, next_attempt_at, created_at)
       SELECT id, ?, ?, ?, now(), ? FROM webhooks WHERE account_id = ? AND ? = ANY(events)`,
      [event.eventId, event.type, event.body, event.at, event.accountId, event.type],
    );
    if (inserted.rowCount > 0) await this.db.raw('SELECT pg_notify(?, ?)', [OUTBOX_CHANNEL, '']);
    return inserted.rowCount;
  }

  /**
   * Claims up to `limit` due deliveries for one attempt each: their next attempt moves
   * `leaseMs` ahead, past the attempt's deadline, and their count goes up, in one statement
   * whose rows another copy of the control API skips while it runs (FOR UPDATE SKIP LOCKED)
   * and finds not due once it has committed. A copy that dies mid-attempt leaves the row
   * to be retried after the lease.
   */
  async claimDue(limit: number, leaseMs: number): Promise<ClaimedDelivery[]> {
    const result = await this.db.raw(
      `WITH due AS (
         SELECT id FROM webhook_outbox WHERE next_attempt_at <= now()
         ORDER BY next_attempt_at LIMIT ? FOR UPDATE SKIP LOCKED
       )
       UPDATE webhook_outbox o SET attempts = o.attempts + 1, next_attempt_at = now() + make_interval(secs => ?)
       FROM due, webhooks w WHERE o.id = due.id AND w.id = o.webhook_id
       RETURNING o.id::text AS id, o.webhook_id, w.url, w.secret_sealed, o.event_id, o.event_type, o.body, o.attempts AS attempt, o.created_at`,
      [limit, leaseMs / 1000],
    );
    return result.rows;
  }

  /** Delivered or given up: the row leaves the outbox (its attempts stay in webhook_deliveries). Only by the claim of this attempt. */
  async finish(id: string, attempt: number): Promise<void> {
    await this.db('webhook_outbox').where({ id, attempts: attempt }).delete();
  }

  /** The next attempt is due `delayMs` from now. Only by the claim of this attempt. */
  async retryIn(id: string, attempt: number, delayMs: number): Promise<void> {
    await this.db('webhook_outbox').where({ id, attempts: attempt }).update({ next_attempt_at: this.db.raw('now() + make_interval(secs => ?)', [delayMs / 1000]) });
  }

  /** How long until the next delivery is due (0 when one is), or null when the outbox is empty. */
  async msUntilNextDue(): Promise<number | null> {
    const result = await this.db.raw('SELECT greatest(0, extract(epoch FROM min(next_attempt_at) - now()) * 1000)::float8 AS ms FROM webhook_outbox');
    const ms = result.rows[0]?.ms;
    return ms === null || ms === undefined ? null : Number(ms);
  }

  /**
   * The outbox for monitoring: deliveries due now (none claimed: a claim moves its row past
   * the attempt's deadline), those waiting for a retry, and how long the oldest due one has
   * waited (0 with none), by Postgres's clock.
   */
  async backlog(): Promise<OutboxBacklog> {
    const result = await this.db.raw(
      `SELECT count(*) FILTER (WHERE next_attempt_at <= now())::int AS due,
              count(*) FILTER (WHERE next_attempt_at > now())::int AS scheduled,
              coalesce(extract(epoch FROM now() - min(next_attempt_at) FILTER (WHERE next_attempt_at <= now())), 0)::float8 AS oldest_due_seconds
       FROM webhook_outbox`,
    );
    const row = result.rows[0];
    return { due: row.due, scheduled: row.scheduled, oldestDueSeconds: row.oldest_due_seconds };
  }
}

export interface OutboxBacklog {
  due: number;
  scheduled: number;
  oldestDueSeconds: number;
}
