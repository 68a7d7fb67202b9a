import type { ApiKeyService } from '../../services/api-key-service.js';
import { ErrorBody } from '../../schemas/common.js';
import { ApiKeyCreated, ApiKeyList, CreateKeyBody } from '../../schemas/keys.js';
import { defineRoute } from '../route.js';

const sessionOnly = { description: 'AUTHORISATION_DENIED: personal API keys are managed with a session token only', schema: ErrorBody };

export const apiKeyRoutes = (apiKeys: ApiKeyService) => [
  defineRoute({
    method: 'post',
    path: '/api-keys',
    summary: 'Create a personal API key (agnt_…); the key is shown only in this response',
    tag: 'Personal API keys',
    auth: 'any',
    body: CreateKeyBody,
    responses: { 201: { description: 'Created', schema: ApiKeyCreated }, 403: sessionOnly },
    handler: async ({ principal, audit, body }) => ({ status: 201, body: await apiKeys.create(principal, audit, body.label) }),
  }),
  defineRoute({
    method: 'get',
    path: '/api-keys',
    summary: "The caller's personal API keys, without the secrets",
    tag: 'Personal API keys',
    auth: 'any',
    responses: { 200: { description: 'The keys', schema: ApiKeyList }, 403: sessionOnly },
    handler: async ({ principal }) => ({ status: 200, body: { api_keys: await apiKeys.list(principal) } }),
  }),
  defineRoute({
    method: 'delete',
    path: '/api-keys/:id',
    summary: 'Revoke a personal API key',
    tag: 'Personal API keys',
    auth: 'any',
    responses: { 204: { description: 'Revoked' }, 403: sessionOnly, 404: { description: 'NOT_FOUND', schema: ErrorBody } },
    handler: async ({ principal, audit, params }) => {
      await apiKeys.revoke(principal, audit, params.id!);
      return { status: 204 };
    },
  }),
];
