import { Agent, Deploy, LogEntry } from '../../schemas/agents.js';
import { SessionSummary } from '../../schemas/agent-sessions.js';
import { InvocationSpan, InvocationSummary } from '../../schemas/invocations.js';
import { Membership, User } from '../../schemas/auth.js';
import { Invite } from '../../schemas/invites.js';
import { Deployment } from '../../schemas/deployments.js';
import { Domain, DomainCertificate } from '../../schemas/domains.js';
import { DeploymentProgress, DeploymentStreamEnd } from '../../schemas/deployment-events.js';
import { AccessKey, ApiKey } from '../../schemas/keys.js';
import { OpenApiDocument } from '../../schemas/meta.js';
import { StreamAccessEnded } from '../../schemas/observability-streams.js';
import { Webhook, WebhookDelivery } from '../../schemas/webhooks.js';
import { defineRoute, type RouteSpec } from '../route.js';
import { buildOpenApi } from '../openapi.js';
import { RELEASE_VERSION } from '../release.js';

/** Schemas only reached through Type.Ref, registered as components by hand. */
const REFERENCED = [User, Membership, Invite, Agent, Deploy, Deployment, DeploymentProgress, DeploymentStreamEnd, StreamAccessEnded, LogEntry, AccessKey, ApiKey, Webhook, WebhookDelivery, Domain, DomainCertificate, SessionSummary, InvocationSummary, InvocationSpan];

/** The server URL the document names: PUBLIC_API_URL's /v1, else a relative /v1 (never the bind address, which clients may not reach). */
export const documentServerUrl = (publicApiUrl: string | null) => `${publicApiUrl ?? ''}/v1`;

/** GET /openapi.json, and the document it serves (built once, on first use) for the reference page. */
export const apiDocument = (documented: RouteSpec[], serverUrl: string) => {
  let document: Record<string, any> | undefined;
  const build = () => (document ??= buildOpenApi([...documented, route], REFERENCED, { serverUrl, version: RELEASE_VERSION }));
  const route: RouteSpec = defineRoute({
    method: 'get',
    path: '/openapi.json',
    operationId: 'getOpenApiDocument',
    tag: 'Meta',
    summary: 'Get the OpenAPI document',
    description: 'This document: every operation of the control API with its schemas, for generating clients (openapi-typescript, openapi-generator) and the reference at /docs.',
    auth: 'none',
    responses: { 200: { description: 'The OpenAPI 3.1 document of the control API', schema: OpenApiDocument } },
    handler: async () => ({ status: 200, body: build() }),
  });
  return { route, document: build };
};
