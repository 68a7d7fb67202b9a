import { ErrorBody } from '../../schemas/common.js';
import { ListSessionsQuery, SessionList } from '../../schemas/agent-sessions.js';
import type { SessionOwnerService } from '../../services/session-owner-service.js';
import { defineRoute } from '../route.js';

/** An agent's conversation sessions as its owner sees them (issue 37): sizes and use, never contents. */
export const agentSessionRoutes = (sessions: SessionOwnerService) => [
  defineRoute({
    method: 'get',
    path: '/agents/:id/sessions',
    operationId: 'listAgentSessions',
    tag: 'Sessions',
    summary: "List an agent's sessions",
    description: "The conversation sessions the agent's replicas keep, most recently used first: ids, sizes, versions and expiry, never their messages. Expired sessions are not listed",
    auth: 'any',
    query: ListSessionsQuery,
    responses: { 200: { description: 'A page of sessions', schema: SessionList }, 404: { description: 'NOT_FOUND: no such agent in your account', schema: ErrorBody } },
    handler: async ({ principal, params, query }) => ({ status: 200, body: await sessions.list(principal, params.id!, query) }),
  }),
  defineRoute({
    method: 'delete',
    path: '/agents/:id/sessions/:sessionId',
    operationId: 'deleteAgentSession',
    tag: 'Sessions',
    summary: 'Delete a session',
    description: 'Delete one conversation session of the agent with its messages; a caller who sends its id again starts a new conversation',
    auth: 'any',
    writes: true,
    responses: {
      204: { description: 'Deleted' },
      404: { description: 'NOT_FOUND: no such agent in your account; SESSION_NOT_FOUND: the agent has no such session, or it expired', schema: ErrorBody },
    },
    handler: async ({ principal, audit, params }) => {
      await sessions.delete(principal, audit, params.id!, params.sessionId!);
      return { status: 204 };
    },
  }),
];
