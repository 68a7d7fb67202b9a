import type { DeploymentService } from '../../services/deployment-service.js';
import { Agent, DeployInput, ScaleBody, ScaleResult } from '../../schemas/agents.js';
import { ErrorBody } from '../../schemas/common.js';
import { acceptedWithEtag } from '../if-match.js';
import { defineRoute } from '../route.js';

const notFound = { description: 'NOT_FOUND: no such agent in your account', schema: ErrorBody };
const quota = { description: 'QUOTA_EXCEEDED (details name the limit) or AUTHORISATION_DENIED', schema: ErrorBody };
const stale = { description: 'PRECONDITION_FAILED: If-Match names an older version', schema: ErrorBody };

export const lifecycleRoutes = (deployments: DeploymentService) => [
  defineRoute({
    method: 'post',
    path: '/agents/:id/deploy',
    operationId: 'deployAgent',
    tag: 'Deployments',
    summary: 'Deploy an agent',
    description: 'Redeploy: new replicas start, and old ones stop once the new ones are up. Omitted fields keep their values. With strategy canary, the new version runs beside the current one with its share of requests until promoted or aborted (POST …/deployments/{deployment_id}/promote or /abort), by hand, after auto_promote_after_seconds, or by its 5xx ratio',
    auth: 'any',
    writes: true,
    body: DeployInput,
    reads: ['If-Match'],
    responses: {
      202: { description: 'Accepted; version + 1', schema: Agent, headers: ['ETag'] }, 403: quota, 404: notFound, 412: stale,
      409: { description: 'CANARY_NOT_POSSIBLE: a canary is running (promote or abort it first), or a canary was asked with no version serving, a rollout under way, or auto-scaling', schema: ErrorBody },
    },
    handler: async ({ principal, audit, params, body, expectedVersion }) => acceptedWithEtag(await deployments.deploy(principal, audit, params.id!, body, expectedVersion)),
  }),
  defineRoute({
    method: 'post',
    path: '/agents/:id/scale',
    operationId: 'scaleAgent',
    tag: 'Agents',
    summary: 'Scale an agent',
    description: 'Add (`up`) or remove (`down`) `count` replicas, between 0 (deploy.min_replicas when auto-scaled) and deploy.max_replicas',
    auth: 'any',
    writes: true,
    body: ScaleBody,
    reads: ['If-Match'],
    responses: {
      200: { description: 'The new replica count', schema: ScaleResult }, 403: quota, 404: notFound, 412: stale,
      422: { description: 'VALIDATION_ERROR at body.count: the count would leave the bounds', schema: ErrorBody },
    },
    handler: async ({ principal, audit, params, body, expectedVersion }) => ({
      status: 200,
      body: await deployments.scale(principal, audit, params.id!, body, expectedVersion),
    }),
  }),
];
