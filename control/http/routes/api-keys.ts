import type { ApiKeyService } from '../../services/api-key-service.js';
import { ErrorBody } from '../../schemas/common.js';
import { ApiKeyCreated, ApiKeyList, CreateKeyBody } from '../../schemas/keys.js';
import { defineRoute } from '../route.js';

const sessionOnly = { description: 'AUTHORISATION_DENIED: personal API keys are managed with a session token only', schema: ErrorBody };

export const apiKeyRoutes = (apiKeys: ApiKeyService) => [
  defineRoute({
    method: 'post',
    path: '/api-keys',
    operationId: 'createApiKey',
    tag: 'API keys',
    summary: 'Create a personal API key',
    description: 'Create a personal API key (agnt_…); the key is shown only in this response',
    auth: 'any',
    body: CreateKeyBody,
    responses: { 201: { description: 'Created', schema: ApiKeyCreated }, 403: sessionOnly },
    handler: async ({ principal, audit, body }) => ({ status: 201, body: await apiKeys.create(principal, audit, body.label) }),
  }),
  defineRoute({
    method: 'get',
    path: '/api-keys',
    operationId: 'listApiKeys',
    tag: 'API keys',
    summary: 'List personal API keys',
    description: "The caller's personal API keys, without the secrets",
    auth: 'any',
    responses: { 200: { description: 'The keys', schema: ApiKeyList }, 403: sessionOnly },
    handler: async ({ principal }) => ({ status: 200, body: { api_keys: await apiKeys.list(principal) } }),
  }),
  defineRoute({
    method: 'delete',
    path: '/api-keys/:id',
    operationId: 'revokeApiKey',
    tag: 'API keys',
    summary: 'Revoke a personal API key',
    description: 'Revoke a personal API key',
    auth: 'any',
    responses: { 204: { description: 'Revoked' }, 403: sessionOnly, 404: { description: 'NOT_FOUND', schema: ErrorBody } },
    handler: async ({ principal, audit, params }) => {
      await apiKeys.revoke(principal, audit, params.id!);
      return { status: 204 };
    },
  }),
];
