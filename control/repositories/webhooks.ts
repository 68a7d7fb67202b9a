import type { Knex } from 'knex';
import type { WebhookDeliveryRow, WebhookRow } from '../domain/webhooks.js';
import { pageOf, type Page } from './page.js';
import { insertUnlessParentGone } from './parent-gone.js';

/** Attempts kept per webhook: what GET /account/webhooks/{id}/deliveries shows. */
export const DELIVERIES_KEPT = 100;

export type NewDelivery = Omit<WebhookDeliveryRow, 'id'>;

/** An account's webhooks and the attempts made to deliver to them. */
export class WebhookRepository {
  constructor(private readonly db: Knex) {}

  /** False when the account is gone: deleted while the request was under way. */
  async insert(row: WebhookRow): Promise<boolean> {
    return insertUnlessParentGone(this.db('webhooks'), row);
  }

  async page(accountId: string, offset: number, limit: number): Promise<Page<WebhookRow>> {
    return pageOf(this.db<WebhookRow>('webhooks').where({ account_id: accountId }), [{ column: 'created_at', order: 'desc' }, { column: 'id', order: 'desc' }], offset, limit);
  }

  async find(accountId: string, id: string): Promise<WebhookRow | undefined> {
    return this.db<WebhookRow>('webhooks').where({ account_id: accountId, id }).first();
  }

  /** Its pending events and its attempts go with it (foreign keys, ON DELETE CASCADE). */
  async delete(accountId: string, id: string): Promise<boolean> {
    return (await this.db('webhooks').where({ account_id: accountId, id }).delete()) > 0;
  }

  /** The newest attempts first. */
  async deliveries(webhookId: string): Promise<WebhookDeliveryRow[]> {
    const rows = await this.db('webhook_deliveries').where({ webhook_id: webhookId }).orderBy('id', 'desc').limit(DELIVERIES_KEPT);
    return rows.map((row) => ({ ...row, id: String(row.id) }));
  }

  /** Records an attempt and forgets the ones past the last DELIVERIES_KEPT of its webhook. */
  async addDelivery(delivery: NewDelivery): Promise<void> {
    await this.db('webhook_deliveries').insert(delivery);
    await this.db('webhook_deliveries')
      .where({ webhook_id: delivery.webhook_id })
      .whereNotIn('id', this.db('webhook_deliveries').select('id').where({ webhook_id: delivery.webhook_id }).orderBy('id', 'desc').limit(DELIVERIES_KEPT))
      .delete();
  }
}
