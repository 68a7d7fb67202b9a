import { isSessionId } from '../../domain/agent-session.js';
import { validationError } from '../../domain/errors.js';
import type { AgentSessionService } from '../../services/agent-session-service.js';
import { AppendMessagesBody, ReplaceMessagesBody } from '../../schemas/agent-sessions.js';
import { defineAgentRoute } from './agent-route.js';

/** The path's session id, checked as the schema would check a field (422 at ["path", "session_id"]). */
function sessionIdOf(params: Record<string, string>): string {
  const id = params.session_id ?? '';
  if (!isSessionId(id)) throw validationError([{ loc: ['path', 'session_id'], msg: 'must be 1 to 128 of A-Z a-z 0-9 . _ : -, and not . or ..', type: 'value_error.pattern' }]);
  return id;
}

/** Sessions API v1 (docs/contract.md): a replica's own agent's sessions, by the id the agent gives them. */
export const sessionRoutes = (sessions: AgentSessionService) => [
  defineAgentRoute({
    method: 'get',
    path: '/sessions/:session_id',
    handler: async ({ credential, params }) => {
      const { messagesJson, ...session } = await sessions.get(credential.agentId, sessionIdOf(params));
      // The messages go out as the text they were stored as: parsing a megabyte to print it again would only cost time.
      return { status: 200, jsonText: `${JSON.stringify(session).slice(0, -1)},"messages":${messagesJson}}` };
    },
  }),
  defineAgentRoute({
    method: 'post',
    path: '/sessions/:session_id/messages',
    body: AppendMessagesBody,
    handler: async ({ credential, params, body }) => ({
      status: 200,
      body: await sessions.append(credential.agentId, sessionIdOf(params), body.expected_version, body.messages),
    }),
  }),
  defineAgentRoute({
    method: 'put',
    path: '/sessions/:session_id',
    body: ReplaceMessagesBody,
    handler: async ({ credential, params, body }) => ({
      status: 200,
      body: await sessions.replace(credential.agentId, sessionIdOf(params), body.expected_version, body.messages),
    }),
  }),
  defineAgentRoute({
    method: 'delete',
    path: '/sessions/:session_id',
    handler: async ({ credential, params }) => {
      await sessions.delete(credential.agentId, sessionIdOf(params));
      return { status: 204 };
    },
  }),
];
