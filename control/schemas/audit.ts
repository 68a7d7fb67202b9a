import { Type, type Static } from '@sinclair/typebox';
import { AUDIT_ACTIONS, AUDIT_ACTOR_TYPES } from '../domain/audit.js';
import { PAGE_FIELDS, PAGE_QUERY, StringEnum, Timestamp } from './common.js';
import * as ex from './examples.js';

export const ListAuditEventsQuery = Type.Object({
  action: Type.Optional(StringEnum(AUDIT_ACTIONS)),
  agent_id: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'events about the agent and about its access keys' })),
  actor_id: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'a user id (also what they did through their API keys) or an API key id' })),
  since: Type.Optional(Type.String({ format: 'date-time', description: 'events at or after this time' })),
  until: Type.Optional(Type.String({ format: 'date-time', description: 'events before this time' })),
  ...PAGE_QUERY,
});
export type ListAuditEventsQuery = Static<typeof ListAuditEventsQuery>;

const Nullable = <T extends ReturnType<typeof Type.String>>(schema: T) => Type.Union([schema, Type.Null()]);

export const AuditEvent = Type.Object(
  {
    id: Type.String({ description: 'aud_…' }),
    at: Timestamp,
    action: StringEnum(AUDIT_ACTIONS),
    actor: Type.Object({
      type: StringEnum(AUDIT_ACTOR_TYPES),
      id: Nullable(Type.String({ description: 'a user id, an API key id, or null for the platform' })),
      email: Nullable(Type.String()),
    }),
    target: Type.Object({ type: Type.String(), id: Nullable(Type.String()) }),
    request_id: Nullable(Type.String({ description: 'the X-Request-Id of the response that made the change' })),
    ip: Nullable(Type.String()),
    details: Type.Record(Type.String(), Type.Unknown(), { description: 'small, never a secret: names of changed fields, from/to values' }),
  },
  { description: 'One change: who made it, to what, in which request' },
);
export type AuditEvent = Static<typeof AuditEvent>;

export const AuditEventList = Type.Object(
  {
    events: Type.Array(AuditEvent),
    ...PAGE_FIELDS,
  },
  { $id: 'AuditEventList', examples: [{ events: [ex.auditEvent], ...ex.onePage }] },
);
export type AuditEventList = Static<typeof AuditEventList>;
