import { randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import type { Clock } from '../../contract/clock.js';
import type { SecretBox } from '../crypto/secret-box.js';
import { ID_PREFIX, newId } from '../crypto/tokens.js';
import type { AuditContext } from '../domain/audit.js';
import type { AddressPolicy } from '../domain/public-address.js';
import { checkWebhookUrl } from '../domain/webhook-url.js';
import type { WebhookDeliveryRow, WebhookRow } from '../domain/webhooks.js';
import { notFound, PlatformError, validationError } from '../domain/errors.js';
import { inTransaction, repositoriesOn } from '../repositories/index.js';
import type { CreateWebhookBody, ListWebhooksQuery, Webhook, WebhookCreated, WebhookDelivery, WebhookList } from '../schemas/webhooks.js';
import { recordAudit } from './audit-log.js';
import { pageEnvelope, pageWindow } from './paging.js';
import type { Principal } from './principal.js';

/** Standard Webhooks' secret format: whsec_ and the base64 of the key's bytes (24 to 64 of them; we take 32). */
const SECRET_PREFIX = 'whsec_';

/** An account's webhooks (docs/webhooks.md): owners and admins only, as they see every agent's events. */
export class WebhookService {
  constructor(
    private readonly db: Knex,
    private readonly clock: Clock,
    private readonly box: SecretBox,
    /** Where a URL may point, as the sender checks it at each delivery (WEBHOOK_ALLOW_PRIVATE_NETWORKS). */
    private readonly addressPolicy: AddressPolicy,
  ) {}

  async create(principal: Principal, body: CreateWebhookBody, audit: AuditContext): Promise<WebhookCreated> {
    assertManager(principal);
    const secret = `${SECRET_PREFIX}${randomBytes(32).toString('base64')}`;
    const row: WebhookRow = {
      id: newId(ID_PREFIX.webhook),
      account_id: principal.accountId,
      url: checkedUrl(body.url, this.addressPolicy),
      events: body.events,
      description: body.description ?? null,
      secret_sealed: this.box.seal(secret),
      created_at: this.clock.now(),
    };
    await inTransaction(this.db, async (repos) => {
      if (!(await repos.webhooks.insert(row))) throw notFound('Account');
      await recordAudit(repos, audit, { accountId: row.account_id, at: row.created_at, action: 'webhook.create', target: { type: 'webhook', id: row.id } });
    });
    return { ...webhookView(row), secret };
  }

  async list(principal: Principal, query: ListWebhooksQuery): Promise<WebhookList> {
    assertManager(principal);
    const window = pageWindow(query);
    const { rows, total } = await repositoriesOn(this.db).webhooks.page(principal.accountId, window.offset, window.pageSize);
    return { webhooks: rows.map(webhookView), ...pageEnvelope(window, total) };
  }

  /** Its pending deliveries go with it: nothing more is sent to the URL. */
  async delete(principal: Principal, id: string, audit: AuditContext): Promise<void> {
    assertManager(principal);
    await inTransaction(this.db, async (repos) => {
      if (!(await repos.webhooks.delete(principal.accountId, id))) throw notFound('Webhook');
      await recordAudit(repos, audit, { accountId: principal.accountId, at: this.clock.now(), action: 'webhook.delete', target: { type: 'webhook', id } });
    });
  }

  async deliveries(principal: Principal, id: string): Promise<WebhookDelivery[]> {
    assertManager(principal);
    const repos = repositoriesOn(this.db);
    if (!(await repos.webhooks.find(principal.accountId, id))) throw notFound('Webhook');
    return (await repos.webhooks.deliveries(id)).map(deliveryView);
  }
}

function assertManager(principal: Principal): void {
  if (principal.role !== 'owner' && principal.role !== 'admin') {
    throw new PlatformError('AUTHORISATION_DENIED', 'Only owners and admins manage webhooks');
  }
}

function checkedUrl(text: string, policy: AddressPolicy): string {
  const checked = checkWebhookUrl(text, policy);
  if ('problem' in checked) throw validationError([{ loc: ['body', 'url'], msg: checked.problem, type: 'value_error.url' }]);
  return checked.url;
}

function webhookView(row: WebhookRow): Webhook {
  return { id: row.id, url: row.url, events: row.events, description: row.description, created_at: row.created_at.toISOString() };
}

function deliveryView(row: WebhookDeliveryRow): WebhookDelivery {
  const { event_id, event_type, attempt, status_code, duration_ms, error } = row;
  return { event_id, event_type, attempt, status_code, duration_ms, error, at: row.at.toISOString() };
}
