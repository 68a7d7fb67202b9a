import { Type, type Static } from '@sinclair/typebox';
import { WEBHOOK_EVENT_TYPES } from '../domain/webhooks.js';
import { NullableInteger, PAGE_FIELDS, PAGE_QUERY, StringEnum, Timestamp } from './common.js';
import * as ex from './examples.js';

/** Long enough for any real endpoint; a URL is stored and shown on every listing. */
export const WEBHOOK_URL_MAX_LENGTH = 2048;

export const CreateWebhookBody = Type.Object(
  {
    url: Type.String({ minLength: 1, maxLength: WEBHOOK_URL_MAX_LENGTH, description: 'http or https, without user or password, written as a WHATWG URL parser writes it; where it points is checked now and again at each delivery (docs/webhooks.md, "SSRF")' }),
    events: Type.Array(StringEnum(WEBHOOK_EVENT_TYPES), { minItems: 1, maxItems: WEBHOOK_EVENT_TYPES.length, uniqueItems: true }),
    description: Type.Optional(Type.String({ maxLength: 256 })),
  },
  { additionalProperties: false, examples: [{ url: ex.webhook.url, events: ex.webhook.events, description: ex.webhook.description }] },
);
export type CreateWebhookBody = Static<typeof CreateWebhookBody>;

const webhookFields = {
  id: Type.String({ description: 'whk_…' }),
  url: Type.String(),
  events: Type.Array(StringEnum(WEBHOOK_EVENT_TYPES)),
  description: Type.Union([Type.String(), Type.Null()]),
  created_at: Timestamp,
};

export const Webhook = Type.Object(webhookFields, { $id: 'Webhook', examples: [ex.webhook] });
export type Webhook = Static<typeof Webhook>;

export const WebhookCreated = Type.Object(
  { ...webhookFields, secret: Type.String({ description: 'the whsec_ signing secret (Standard Webhooks); shown only here' }) },
  { $id: 'WebhookCreated', examples: [{ ...ex.webhook, secret: 'whsec_MfVhYmFzZTY0LWVuY29kZWQtMzItYnl0ZXM=' }] },
);
export type WebhookCreated = Static<typeof WebhookCreated>;

export const WebhookList = Type.Object({ webhooks: Type.Array(Type.Ref(Webhook)), ...PAGE_FIELDS }, { $id: 'WebhookList', examples: [{ webhooks: [ex.webhook], ...ex.onePage }] });
export type WebhookList = Static<typeof WebhookList>;

export const ListWebhooksQuery = Type.Object({ ...PAGE_QUERY });
export type ListWebhooksQuery = Static<typeof ListWebhooksQuery>;

export const WebhookDelivery = Type.Object(
  {
    event_id: Type.String({ description: 'the webhook-id header: the same on every attempt of one event' }),
    event_type: StringEnum(WEBHOOK_EVENT_TYPES),
    attempt: Type.Integer({ minimum: 1 }),
    status_code: NullableInteger({ minimum: 100, maximum: 599, description: "the receiver's answer; null when none came (refused address, connection error, timeout)" }),
    duration_ms: Type.Integer({ minimum: 0 }),
    error: Type.Union([Type.String(), Type.Null()], { description: 'why the attempt failed; null when it was delivered' }),
    at: Timestamp,
  },
  { $id: 'WebhookDelivery', examples: [ex.webhookDelivery] },
);
export type WebhookDelivery = Static<typeof WebhookDelivery>;

export const WebhookDeliveryList = Type.Object({ deliveries: Type.Array(Type.Ref(WebhookDelivery), { description: 'the last 100 attempts, newest first' }) }, { $id: 'WebhookDeliveryList', examples: [{ deliveries: [ex.webhookDelivery] }] });
export type WebhookDeliveryList = Static<typeof WebhookDeliveryList>;
