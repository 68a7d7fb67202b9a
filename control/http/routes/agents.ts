import type { AgentService } from '../../services/agent-service.js';
import { Agent, AgentList, CreateAgentBody, ListAgentsQuery, PatchAgentBody } from '../../schemas/agents.js';
import { ErrorBody } from '../../schemas/common.js';
import { etagOf } from '../if-match.js';
import { defineRoute } from '../route.js';

const notFound = { description: 'NOT_FOUND: no such agent in your account', schema: ErrorBody };
const staleVersion = { description: 'PRECONDITION_FAILED: If-Match names an older version', schema: ErrorBody };

/** The agent body with its version as ETag, for If-Match on the next change. */
const withEtag = (status: number, agent: Agent) => ({ status, body: agent, headers: { ETag: etagOf(agent.version) } });

export const agentRoutes = (agents: AgentService) => [
  defineRoute({
    method: 'post',
    path: '/agents',
    operationId: 'createAgent',
    tag: 'Agents',
    summary: 'Create an agent',
    description: 'Create an agent, and deploy it when `deploy` is given',
    auth: 'any',
    writes: true,
    body: CreateAgentBody,
    responses: {
      201: { description: 'Created; a private agent carries its first access key in access_key, once', schema: Agent, headers: ['ETag'] },
      403: { description: 'QUOTA_EXCEEDED or AUTHORISATION_DENIED', schema: ErrorBody },
      501: { description: 'BUILD_NOT_SUPPORTED: build_path was given', schema: ErrorBody },
    },
    handler: async ({ principal, audit, body }) => withEtag(201, await agents.create(principal, audit, body)),
  }),
  defineRoute({
    method: 'get',
    path: '/agents',
    operationId: 'listAgents',
    tag: 'Agents',
    summary: 'List agents',
    description: "The account's agents, newest first",
    auth: 'any',
    query: ListAgentsQuery,
    responses: { 200: { description: 'One page of agents', schema: AgentList } },
    handler: async ({ principal, query }) => ({ status: 200, body: await agents.list(principal, query) }),
  }),
  defineRoute({
    method: 'get',
    path: '/agents/:id',
    operationId: 'getAgent',
    tag: 'Agents',
    summary: 'Get an agent',
    description: 'One agent; its ETag is its version',
    auth: 'any',
    responses: { 200: { description: 'The agent', schema: Agent, headers: ['ETag'] }, 404: notFound },
    handler: async ({ principal, params }) => withEtag(200, await agents.get(principal, params.id!)),
  }),
  defineRoute({
    method: 'patch',
    path: '/agents/:id',
    operationId: 'updateAgent',
    tag: 'Agents',
    summary: 'Update an agent',
    description: 'Change access settings; omitted fields stay as they are',
    auth: 'any',
    writes: true,
    body: PatchAgentBody,
    reads: ['If-Match'],
    responses: { 200: { description: 'The changed agent', schema: Agent, headers: ['ETag'] }, 404: notFound, 412: staleVersion },
    handler: async ({ principal, audit, params, body, expectedVersion }) =>
      withEtag(200, await agents.patch(principal, audit, params.id!, body, expectedVersion)),
  }),
  defineRoute({
    method: 'delete',
    path: '/agents/:id',
    operationId: 'deleteAgent',
    tag: 'Agents',
    summary: 'Delete an agent',
    description: 'Stop the agent and delete it with its access keys',
    auth: 'any',
    writes: true,
    reads: ['If-Match'],
    responses: { 204: { description: 'Deleted' }, 404: notFound, 412: staleVersion },
    handler: async ({ principal, audit, params, expectedVersion }) => {
      await agents.delete(principal, audit, params.id!, expectedVersion);
      return { status: 204 };
    },
  }),
];
