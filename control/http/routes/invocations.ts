import { ErrorBody } from '../../schemas/common.js';
import { InvocationDetail, InvocationList, ListInvocationsQuery } from '../../schemas/invocations.js';
import type { InvocationService } from '../../services/invocation-service.js';
import { defineRoute } from '../route.js';

/** An agent's invocations as its owner sees them (issue 38; docs/traces.md). */
export const invocationRoutes = (invocations: InvocationService) => [
  defineRoute({
    method: 'get',
    path: '/agents/:id/invocations',
    operationId: 'listAgentInvocations',
    tag: 'Invocations',
    summary: "List an agent's invocations",
    description: "The invokes its replicas traced, newest first: duration, status, session, models, tokens in and out, estimated cost and tool calls. Kept for TRACE_RETENTION_DAYS",
    auth: 'any',
    query: ListInvocationsQuery,
    responses: { 200: { description: 'A page of invocations', schema: InvocationList }, 404: { description: 'NOT_FOUND: no such agent in your account', schema: ErrorBody } },
    handler: async ({ principal, params, query }) => ({ status: 200, body: await invocations.list(principal, params.id!, query) }),
  }),
  defineRoute({
    method: 'get',
    path: '/agents/:id/invocations/:invocationId',
    operationId: 'getAgentInvocation',
    tag: 'Invocations',
    summary: 'Get an invocation with its spans',
    description: 'One invocation and its spans in the order they started: the root span of the invoke, its model calls and its tool calls, with their attributes',
    auth: 'any',
    responses: {
      200: { description: 'The invocation and its spans', schema: InvocationDetail },
      404: { description: 'NOT_FOUND: no such agent in your account, or no such invocation of it', schema: ErrorBody },
    },
    handler: async ({ principal, params }) => ({ status: 200, body: await invocations.get(principal, params.id!, params.invocationId!) }),
  }),
];
