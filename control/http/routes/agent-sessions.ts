import { ErrorBody } from '../../schemas/common.js';
import { ListSessionsQuery, SessionList, SessionWithMessages } from '../../schemas/agent-sessions.js';
import type { SessionOwnerService } from '../../services/session-owner-service.js';
import { defineRoute } from '../route.js';

/** An agent's conversation sessions as its owner sees them (issue 37): sizes and use, and one session's messages when asked for by name. */
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
    method: 'get',
    path: '/agents/:id/sessions/:sessionId',
    operationId: 'getAgentSession',
    tag: 'Sessions',
    summary: "Read a session's messages",
    description:
      "One conversation session of the agent with its messages, as its replicas stored them: to follow or debug a conversation. Messages are the agent's callers' data: viewers are refused, and every read is audited (session.read). Reading it does not move its expiry",
    auth: 'any',
    responses: {
      200: { description: 'The session and its messages', schema: SessionWithMessages },
      403: { description: 'AUTHORISATION_DENIED: viewers see sessions, not their messages', schema: ErrorBody },
      404: { description: 'NOT_FOUND: no such agent in your account; SESSION_NOT_FOUND: the agent has no such session, or it expired', schema: ErrorBody },
    },
    handler: async ({ principal, audit, params }) => ({ status: 200, body: await sessions.read(principal, audit, params.id!, params.sessionId!) }),
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
