import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { LogEntry, MetricsSample } from './agents.js';
import { StringEnum } from './common.js';
import * as ex from './examples.js';

/**
 * Why a stream was ended because its caller lost access: its session signed out, its
 * personal API key revoked, its user removed from the account or given another role there,
 * the account or the agent deleted, the account requiring single sign-on of a credential
 * that did not come from it, or (found by the periodic re-check) its token no longer
 * authenticating, e.g. an expired session.
 */
export const ACCESS_END_REASONS = ['signed_out', 'key_revoked', 'user_removed', 'role_changed', 'account_deleted', 'agent_deleted', 'sso_required', 'token_invalid'] as const;
export type AccessEndReason = (typeof ACCESS_END_REASONS)[number];

/** The data of the last event of a stream whose caller lost access, `event: access-ended`. */
export const StreamAccessEnded = Type.Object({ reason: StringEnum(ACCESS_END_REASONS) }, { $id: 'StreamAccessEnded' });
export type StreamAccessEnded = Static<typeof StreamAccessEnded>;

/** What every stream says of losing access, in its description. */
export const ACCESS_ENDED_TEXT =
  'When the token stops granting access (signed out, revoked, expired, its user removed or given another role, the account or agent deleted, ' +
  'SSO required of a password credential) the server sends `event: access-ended`, `data: StreamAccessEnded` within 5 seconds and closes the stream. ' +
  'Reconnecting with that token gets 401; 403 in an account its user was removed from while a member of another, or once SSO is required (SSO_REQUIRED); ' +
  '404 for a deleted agent; after a role change it opens again, under the new role.';

/**
 * One server-sent event: its `event` name, its `id` when it has one, its `data` (JSON). OpenAPI 3.1 has no schema for a
 * stream's items, so a stream is described as the array of its events, as OpenAPI 3.2 reads a `schema` of a sequential
 * media type; the text on the wire is the events' `id:`, `event:` and `data:` lines.
 */
export const StreamEvent = (event: string, data: TSchema, withId: boolean) =>
  Type.Object({ ...(withId ? { id: Type.String() } : {}), event: Type.Literal(event), data }, { additionalProperties: false });

export const AccessEndedEvent = StreamEvent('access-ended', Type.Ref(StreamAccessEnded), false);

/** The events of a stream, for the OpenAPI document's text/event-stream response. */
export const EventStream = (description: string, events: TSchema[], example: unknown[]) =>
  Type.Array(Type.Union(events), { description, examples: [example] });

/** What the log stream's response body is, for the OpenAPI document: events whose data are LogEntry. */
export const LogEventStream = EventStream(
  'Server-sent events. Each entry: `id: <entry id>`, `event: log`, `data: LogEntry`; a new client gets the last `limit` entries ' +
    'first, a client sending `Last-Event-ID` everything after that entry. The server ends the stream when the agent is deleted. ' +
    `${ACCESS_ENDED_TEXT} Comment lines keep it alive.`,
  [StreamEvent('log', Type.Ref(LogEntry), true), AccessEndedEvent],
  [
    { id: '1764547200123-0', event: 'log', data: ex.logEntry },
    { event: 'access-ended', data: { reason: 'signed_out' } },
  ],
);

/** What the metrics stream's response body is: events whose data are MetricsSample. */
export const MetricsEventStream = EventStream(
  'Server-sent events. Every `interval` seconds: `event: metrics`, `data: MetricsSample`. The server ends the stream when the ' +
    `agent is deleted. ${ACCESS_ENDED_TEXT} Comment lines keep it alive.`,
  [StreamEvent('metrics', Type.Ref(MetricsSample), false), AccessEndedEvent],
  [{ event: 'metrics', data: ex.metricsSample }],
);
