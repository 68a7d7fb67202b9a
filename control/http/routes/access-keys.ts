import type { AccessKeyService } from '../../services/access-key-service.js';
import { ErrorBody } from '../../schemas/common.js';
import { AccessKeyCreated, AccessKeyList, CreateKeyBody } from '../../schemas/keys.js';
import { defineRoute } from '../route.js';

const notFound = { description: 'NOT_FOUND: no such agent or key in your account', schema: ErrorBody };

export const accessKeyRoutes = (accessKeys: AccessKeyService) => [
  defineRoute({
    method: 'post',
    path: '/agents/:id/access-keys',
    operationId: 'createAccessKey',
    tag: 'Access keys',
    summary: 'Create an access key',
    description: 'Create an access key (agk_…) for callers of the agent; shown only in this response',
    auth: 'any',
    writes: true,
    body: CreateKeyBody,
    responses: { 201: { description: 'Created', schema: AccessKeyCreated }, 404: notFound },
    handler: async ({ principal, audit, params, body }) => ({
      status: 201,
      body: await accessKeys.create(principal, audit, params.id!, body.label),
    }),
  }),
  defineRoute({
    method: 'get',
    path: '/agents/:id/access-keys',
    operationId: 'listAccessKeys',
    tag: 'Access keys',
    summary: "List an agent's access keys",
    description: "The agent's access keys, without the secrets",
    auth: 'any',
    responses: { 200: { description: 'The keys', schema: AccessKeyList }, 404: notFound },
    handler: async ({ principal, params }) => ({
      status: 200,
      body: { access_keys: await accessKeys.list(principal, params.id!) },
    }),
  }),
  defineRoute({
    method: 'delete',
    path: '/agents/:id/access-keys/:keyId',
    operationId: 'revokeAccessKey',
    tag: 'Access keys',
    summary: 'Revoke an access key',
    description: 'Revoke an access key; the next request with it is refused',
    auth: 'any',
    writes: true,
    responses: { 204: { description: 'Revoked' }, 404: notFound },
    handler: async ({ principal, audit, params }) => {
      await accessKeys.revoke(principal, audit, params.id!, params.keyId!);
      return { status: 204 };
    },
  }),
];
