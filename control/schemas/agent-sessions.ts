import { Type, type Static } from '@sinclair/typebox';
import { SESSION_ID_PATTERN } from '../domain/agent-session.js';
import { PAGE_FIELDS, PAGE_QUERY, Timestamp } from './common.js';
import * as ex from './examples.js';

/**
 * Sessions (issue 37): what replicas send and get on the agent services endpoint
 * (docs/contract.md, "Sessions API v1"), and what an agent's owner sees of them on the
 * control API: the messages only of one session asked for by name.
 */

export const SessionId = Type.String({ pattern: SESSION_ID_PATTERN, description: "the agent's own name for the session: 1 to 128 of A-Z a-z 0-9 . _ : -, not . or .." });

const ExpectedVersion = Type.Integer({ minimum: 0, maximum: 2_147_483_647, description: 'the version the session is at now; 0: it must not exist yet' });
/** Opaque to the platform: any JSON value is a message. */
const Message = Type.Unknown();

/** Appends are turns of a conversation: a few messages at a time. */
export const AppendMessagesBody = Type.Object(
  { expected_version: ExpectedVersion, messages: Type.Array(Message, { minItems: 1, maxItems: 1000 }) },
  { additionalProperties: false },
);
export type AppendMessagesBody = Static<typeof AppendMessagesBody>;

/** A replace puts back what the runtime kept of a long session (its oldest turns dropped), so it may hold many messages, or none. */
export const ReplaceMessagesBody = Type.Object(
  { expected_version: ExpectedVersion, messages: Type.Array(Message, { description: 'as many as SESSION_MAX_BYTES holds' }) },
  { additionalProperties: false },
);
export type ReplaceMessagesBody = Static<typeof ReplaceMessagesBody>;

/** What a write answers: the session's new version and size, and its new expiry. */
export interface SessionWritten {
  session_id: string;
  version: number;
  size_bytes: number;
  expires_at: string;
}

export interface SessionRead extends SessionWritten {
  messages: unknown[];
}

/** The owner's view of one session. */
export const SessionSummary = Type.Object(
  {
    session_id: Type.String(),
    version: Type.Integer(),
    size_bytes: Type.Integer({ description: "bytes of the messages' JSON" }),
    message_count: Type.Integer(),
    created_at: Timestamp,
    last_used_at: Timestamp,
    expires_at: Timestamp,
  },
  { $id: 'AgentSession', examples: [ex.agentSession] },
);
export type SessionSummary = Static<typeof SessionSummary>;

/** One session with its messages, as its owner asks for it by name. */
export const SessionWithMessages = Type.Object(
  {
    ...SessionSummary.properties,
    messages: Type.Array(Type.Unknown(), { description: 'the messages as the agent stored them, oldest first: JSON the platform does not read' }),
  },
  { $id: 'AgentSessionWithMessages', examples: [ex.agentSessionWithMessages] },
);
export type SessionWithMessages = Static<typeof SessionWithMessages>;

export const SessionList = Type.Object(
  { sessions: Type.Array(Type.Ref(SessionSummary)), ...PAGE_FIELDS },
  { $id: 'AgentSessionList', examples: [{ sessions: [ex.agentSession], ...ex.onePage }] },
);

export const ListSessionsQuery = Type.Object({ ...PAGE_QUERY });
export type ListSessionsQuery = Static<typeof ListSessionsQuery>;
