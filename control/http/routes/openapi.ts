import { Agent, Deploy, LogEntry } from '../../schemas/agents.js';
import { User } from '../../schemas/auth.js';
import { Deployment } from '../../schemas/deployments.js';
import { Domain, DomainCertificate } from '../../schemas/domains.js';
import { DeploymentProgress, DeploymentStreamEnd } from '../../schemas/deployment-events.js';
import { AccessKey, ApiKey } from '../../schemas/keys.js';
import { OpenApiDocument } from '../../schemas/meta.js';
import { StreamAccessEnded } from '../../schemas/observability-streams.js';
import { Webhook, WebhookDelivery } from '../../schemas/webhooks.js';
import { defineRoute, type RouteSpec } from '../route.js';
import { buildOpenApi } from '../openapi.js';

export const openApiRoute = (documented: RouteSpec[], serverUrl: string) => {
  let document: unknown;
  const route: RouteSpec = defineRoute({
    method: 'get',
    path: '/openapi.json',
    summary: 'This document',
    tag: 'Meta',
    auth: 'none',
    responses: { 200: { description: 'The OpenAPI 3.1 document of the control API', schema: OpenApiDocument } },
    handler: async () => ({ status: 200, body: (document ??= buildOpenApi([...documented, route], [User, Agent, Deploy, Deployment, DeploymentProgress, DeploymentStreamEnd, StreamAccessEnded, LogEntry, AccessKey, ApiKey, Webhook, WebhookDelivery, Domain, DomainCertificate], serverUrl)) }),
  });
  return route;
};
