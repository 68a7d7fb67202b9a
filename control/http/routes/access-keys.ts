import type { AccessKeyService } from '../../services/access-key-service.js';
import { ErrorBody } from '../../schemas/common.js';
import { AccessKeyCreated, AccessKeyList, CreateKeyBody } from '../../schemas/keys.js';
import { defineRoute } from '../route.js';

const notFound = { description: 'NOT_FOUND: no such agent or key in your account', schema: ErrorBody };

export const accessKeyRoutes = (accessKeys: AccessKeyService) => [
  defineRoute({
    method: 'post',
    path: '/agents/:id/access-keys',
    summary: 'Create an access key (agk_…) for callers of the agent; shown only in this response',
    tag: 'Access keys',
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
    summary: "The agent's access keys, without the secrets",
    tag: 'Access keys',
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
    summary: 'Revoke an access key; the next request with it is refused',
    tag: 'Access keys',
    auth: 'any',
    writes: true,
    responses: { 204: { description: 'Revoked' }, 404: notFound },
    handler: async ({ principal, audit, params }) => {
      await accessKeys.revoke(principal, audit, params.id!, params.keyId!);
      return { status: 204 };
    },
  }),
];
