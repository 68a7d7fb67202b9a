import { ErrorBody } from '../../schemas/common.js';
import { CreateDomainBody, Domain, DomainList } from '../../schemas/domains.js';
import type { DomainService } from '../../services/domain-service.js';
import { defineRoute } from '../route.js';

const notFound = { description: 'NOT_FOUND: no such agent or domain in your account', schema: ErrorBody };

/** Custom domains of an agent (issue 34; docs/domains.md). */
export const domainRoutes = (domains: DomainService) => [
  defineRoute({
    method: 'post',
    path: '/agents/:id/domains',
    operationId: 'createAgentDomain',
    tag: 'Domains',
    summary: 'Add a custom domain',
    description: 'Claim a hostname for the agent; create the TXT record the answer names to prove it is yours, and a certificate is ordered once it is seen',
    auth: 'any',
    writes: true,
    body: CreateDomainBody,
    responses: {
      201: { description: 'Claimed, pending verification', schema: Domain },
      403: { description: "QUOTA_EXCEEDED: the plan's max_custom_domains is reached; AUTHORISATION_DENIED: viewers may not", schema: ErrorBody },
      404: notFound,
      409: { description: 'DOMAIN_TAKEN: an agent on this platform (of any account) has the hostname', schema: ErrorBody },
      422: { description: 'VALIDATION_ERROR: not a valid DNS name, or the agent domain or under it (details.errors names the rule)', schema: ErrorBody },
    },
    handler: async ({ principal, audit, params, body }) => ({ status: 201, body: await domains.create(principal, audit, params.id!, body.hostname) }),
  }),
  defineRoute({
    method: 'get',
    path: '/agents/:id/domains',
    operationId: 'listAgentDomains',
    tag: 'Domains',
    summary: "List an agent's custom domains",
    description: "The agent's custom domains, oldest first, with their status and TXT records",
    auth: 'any',
    responses: { 200: { description: 'The domains', schema: DomainList }, 404: notFound },
    handler: async ({ principal, params }) => ({ status: 200, body: { domains: await domains.list(principal, params.id!) } }),
  }),
  defineRoute({
    method: 'get',
    path: '/agents/:id/domains/:domainId',
    operationId: 'getAgentDomain',
    tag: 'Domains',
    summary: 'Get a custom domain',
    description: 'One custom domain',
    auth: 'any',
    responses: { 200: { description: 'The domain', schema: Domain }, 404: notFound },
    handler: async ({ principal, params }) => ({ status: 200, body: await domains.get(principal, params.id!, params.domainId!) }),
  }),
  defineRoute({
    method: 'delete',
    path: '/agents/:id/domains/:domainId',
    operationId: 'deleteAgentDomain',
    tag: 'Domains',
    summary: 'Remove a custom domain',
    description: 'Remove a custom domain: the edge stops routing it before this answers',
    auth: 'any',
    writes: true,
    responses: { 204: { description: 'Removed' }, 404: notFound },
    handler: async ({ principal, audit, params }) => {
      await domains.delete(principal, audit, params.id!, params.domainId!);
      return { status: 204 };
    },
  }),
  defineRoute({
    method: 'post',
    path: '/agents/:id/domains/:domainId/verify',
    operationId: 'verifyAgentDomain',
    tag: 'Domains',
    summary: 'Verify a custom domain now',
    description: 'Check the TXT record now rather than at the next retry; a failed domain starts over',
    auth: 'any',
    writes: true,
    responses: { 202: { description: 'The check is asked for; the domain as it stands', schema: Domain }, 404: notFound },
    handler: async ({ principal, params }) => ({ status: 202, body: await domains.requestCheck(principal, params.id!, params.domainId!) }),
  }),
];
