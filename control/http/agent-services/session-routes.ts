import { isSessionId, sessionTagOf } from '../../domain/agent-session.js';
import { validationError } from '../../domain/errors.js';
import type { AgentSessionService, SessionTagged } from '../../services/agent-session-service.js';
import { AppendMessagesBody, ReplaceMessagesBody } from '../../schemas/agent-sessions.js';
import { defineAgentRoute, type AgentRouteResult } from './agent-route.js';

/** The path's session id, checked as the schema would check a field (422 at ["path", "session_id"]). */
function sessionIdOf(params: Record<string, string>): string {
  const id = params.session_id ?? '';
  if (!isSessionId(id)) throw validationError([{ loc: ['path', 'session_id'], msg: 'must be 1 to 128 of A-Z a-z 0-9 . _ : -, and not . or ..', type: 'value_error.pattern' }]);
  return id;
}

/** A write's answer: the session as written, its entity tag as ETag, so a reader can ask for it again with If-None-Match. */
function tagged({ entityTag, ...written }: SessionTagged): AgentRouteResult {
  return { status: 200, headers: { etag: entityTag }, body: written };
}

/** Sessions API v1 (docs/contract.md): a replica's own agent's sessions, by the id the agent gives them. */
export const sessionRoutes = (sessions: AgentSessionService) => [
  defineAgentRoute({
    method: 'get',
    path: '/sessions/:session_id',
    handler: async ({ credential, params, headers, answerBudget }) => {
      const read = await sessions.get(credential.agentId, sessionIdOf(params), sessionTagOf(headers['if-none-match']), answerBudget);
      if ('unchanged' in read) return { status: 304, headers: { etag: read.entityTag } };
      const { messagesJson, entityTag, ...session } = read;
      // The messages go out as the text they were stored as: parsing a megabyte to print it again would only cost time.
      return { status: 200, headers: { etag: entityTag }, jsonText: `${JSON.stringify(session).slice(0, -1)},"messages":${messagesJson}}` };
    },
  }),
  defineAgentRoute({
    method: 'post',
    path: '/sessions/:session_id/messages',
    body: AppendMessagesBody,
    handler: async ({ credential, params, body }) => tagged(await sessions.append(credential.agentId, sessionIdOf(params), body.expected_version, body.messages)),
  }),
  defineAgentRoute({
    method: 'put',
    path: '/sessions/:session_id',
    body: ReplaceMessagesBody,
    handler: async ({ credential, params, body }) => tagged(await sessions.replace(credential.agentId, sessionIdOf(params), body.expected_version, body.messages)),
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
