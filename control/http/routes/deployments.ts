import type { DeploymentService } from '../../services/deployment-service.js';
import type { DeploymentHistoryService } from '../../services/deployment-history.js';
import type { CanaryService } from '../../services/canary-service.js';
import { Agent } from '../../schemas/agents.js';
import { ErrorBody } from '../../schemas/common.js';
import { Deployment, DeploymentList, ListDeploymentsQuery, RollbackBody } from '../../schemas/deployments.js';
import { acceptedWithEtag } from '../if-match.js';
import { defineRoute } from '../route.js';

const notFound = { description: 'NOT_FOUND: no such agent in your account; DEPLOYMENT_NOT_FOUND: the agent has no such deployment', schema: ErrorBody };

const notCanary = { description: 'NOT_A_RUNNING_CANARY: this deployment is not a canary running now (promoted, aborted, or rolling)', schema: ErrorBody };

export const deploymentRoutes = (history: DeploymentHistoryService, deployments: DeploymentService, canaries: CanaryService) => [
  defineRoute({
    method: 'get',
    path: '/agents/:id/deployments',
    operationId: 'listDeployments',
    tag: 'Deployments',
    summary: "List an agent's deployments",
    description: "The agent's deployments (every deploy, create that deploys and rollback), newest first",
    auth: 'any',
    query: ListDeploymentsQuery,
    responses: { 200: { description: 'One page of deployments', schema: DeploymentList }, 404: notFound },
    handler: async ({ principal, params, query }) => ({ status: 200, body: await history.list(principal, params.id!, query) }),
  }),
  defineRoute({
    method: 'get',
    path: '/agents/:id/deployments/:deploymentId',
    operationId: 'getDeployment',
    tag: 'Deployments',
    summary: 'Get a deployment',
    description: 'One deployment: the configuration it rolled out (secret values "***") and its status',
    auth: 'any',
    responses: { 200: { description: 'The deployment', schema: Deployment }, 404: notFound },
    handler: async ({ principal, params }) => ({ status: 200, body: await history.get(principal, params.id!, params.deploymentId!) }),
  }),
  defineRoute({
    method: 'post',
    path: '/agents/:id/rollback',
    operationId: 'rollbackAgent',
    tag: 'Deployments',
    summary: 'Roll back an agent',
    description: "Roll out a past deployment's configuration again (image, port, resources, env with its secrets, model and key, system prompt, replicas and scaling bounds) as a new version and deployment",
    auth: 'any',
    writes: true,
    body: RollbackBody,
    reads: ['If-Match'],
    responses: {
      202: { description: 'Accepted; version + 1, and a new deployment with rollback_of set', schema: Agent, headers: ['ETag'] },
      403: { description: "QUOTA_EXCEEDED (the target's replicas or resources pass the plan) or AUTHORISATION_DENIED", schema: ErrorBody },
      404: notFound,
      412: { description: 'PRECONDITION_FAILED: If-Match names an older version', schema: ErrorBody },
    },
    handler: async ({ principal, audit, params, body, expectedVersion }) => acceptedWithEtag(await deployments.rollback(principal, audit, params.id!, body, expectedVersion)),
  }),
  defineRoute({
    method: 'post',
    path: '/agents/:id/deployments/:deploymentId/promote',
    operationId: 'promoteDeployment',
    tag: 'Deployments',
    summary: 'Promote a canary',
    description: "The running canary becomes the whole agent: it takes all traffic and scales to the agent's deploy.replicas, then the old version drains. The deployment ends succeeded once rolled out",
    auth: 'any',
    writes: true,
    responses: {
      202: { description: 'Accepted: the deployment, its phase no longer canary', schema: Deployment },
      403: { description: 'QUOTA_EXCEEDED (the new version at full count passes the plan) or AUTHORISATION_DENIED', schema: ErrorBody },
      404: notFound,
      409: notCanary,
    },
    handler: async ({ principal, audit, params }) => {
      await history.find(principal, params.id!, params.deploymentId!);
      await canaries.promote(principal.accountId, audit, params.id!, params.deploymentId!);
      return { status: 202, body: await history.get(principal, params.id!, params.deploymentId!) };
    },
  }),
  defineRoute({
    method: 'post',
    path: '/agents/:id/deployments/:deploymentId/abort',
    operationId: 'abortDeployment',
    tag: 'Deployments',
    summary: 'Abort a canary',
    description: 'All traffic goes back to the version the canary ran beside, whose configuration the agent takes again; the canary replicas are removed. The deployment ends cancelled',
    auth: 'any',
    writes: true,
    responses: {
      202: { description: 'Accepted: the deployment, cancelled', schema: Deployment },
      404: notFound,
      409: notCanary,
    },
    handler: async ({ principal, audit, params }) => {
      await history.find(principal, params.id!, params.deploymentId!);
      await canaries.abort(principal.accountId, audit, params.id!, params.deploymentId!, { status: 'cancelled', reason: 'aborted by hand' });
      return { status: 202, body: await history.get(principal, params.id!, params.deploymentId!) };
    },
  }),
];
