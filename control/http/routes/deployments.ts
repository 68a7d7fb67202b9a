import type { DeploymentService } from '../../services/deployment-service.js';
import type { DeploymentHistoryService } from '../../services/deployment-history.js';
import { Agent } from '../../schemas/agents.js';
import { ErrorBody } from '../../schemas/common.js';
import { Deployment, DeploymentList, ListDeploymentsQuery, RollbackBody } from '../../schemas/deployments.js';
import { etagOf } from '../if-match.js';
import { defineRoute } from '../route.js';

const notFound = { description: 'NOT_FOUND: no such agent in your account; DEPLOYMENT_NOT_FOUND: the agent has no such deployment', schema: ErrorBody };

export const deploymentRoutes = (history: DeploymentHistoryService, deployments: DeploymentService) => [
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
    handler: async ({ principal, audit, params, body, expectedVersion }) => {
      const agent = await deployments.rollback(principal, audit, params.id!, body, expectedVersion);
      return { status: 202, body: agent, headers: { ETag: etagOf(agent.version) } };
    },
  }),
];
