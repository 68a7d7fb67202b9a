import { ErrorBody } from '../../schemas/common.js';
import { CreateWebhookBody, ListWebhooksQuery, WebhookCreated, WebhookDeliveryList, WebhookList } from '../../schemas/webhooks.js';
import type { WebhookService } from '../../services/webhook-service.js';
import { defineRoute } from '../route.js';

const managersOnly = { description: 'AUTHORISATION_DENIED: only owners and admins manage webhooks', schema: ErrorBody };
const noSuchWebhook = { description: 'NOT_FOUND: no such webhook in this account', schema: ErrorBody };

/** The account's webhooks (docs/webhooks.md). */
export const webhookRoutes = (webhooks: WebhookService) => [
  defineRoute({
    method: 'post',
    path: '/account/webhooks',
    operationId: 'createWebhook',
    tag: 'Webhooks',
    summary: 'Create a webhook',
    description: 'Subscribe a URL to events of the account; the whsec_ signing secret is shown only in this response',
    auth: 'any',
    body: CreateWebhookBody,
    responses: { 201: { description: 'Created', schema: WebhookCreated }, 403: managersOnly },
    handler: async ({ principal, body, audit }) => ({ status: 201, body: await webhooks.create(principal, body, audit) }),
  }),
  defineRoute({
    method: 'get',
    path: '/account/webhooks',
    operationId: 'listWebhooks',
    tag: 'Webhooks',
    summary: 'List webhooks',
    description: "The account's webhooks, newest first, without their secrets",
    auth: 'any',
    query: ListWebhooksQuery,
    responses: { 200: { description: 'The webhooks', schema: WebhookList }, 403: managersOnly },
    handler: async ({ principal, query }) => ({ status: 200, body: await webhooks.list(principal, query) }),
  }),
  defineRoute({
    method: 'delete',
    path: '/account/webhooks/:id',
    operationId: 'deleteWebhook',
    tag: 'Webhooks',
    summary: 'Delete a webhook',
    description: 'Delete a webhook: its pending deliveries are dropped',
    auth: 'any',
    responses: { 204: { description: 'Deleted' }, 403: managersOnly, 404: noSuchWebhook },
    handler: async ({ principal, params, audit }) => {
      await webhooks.delete(principal, params.id!, audit);
      return { status: 204 };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/account/webhooks/:id/deliveries',
    operationId: 'listWebhookDeliveries',
    tag: 'Webhooks',
    summary: "List a webhook's deliveries",
    description: "A webhook's last 100 delivery attempts, newest first",
    auth: 'any',
    responses: { 200: { description: 'The attempts', schema: WebhookDeliveryList }, 403: managersOnly, 404: noSuchWebhook },
    handler: async ({ principal, params }) => ({ status: 200, body: { deliveries: await webhooks.deliveries(principal, params.id!) } }),
  }),
];
