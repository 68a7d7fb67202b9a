import { Type, type Static } from '@sinclair/typebox';
import { StringEnum } from './common.js';

/**
 * Why a stream was ended because its caller lost access: its session signed out, its
 * personal API key revoked, its user removed from the account, the account or the agent
 * deleted, or (found by the periodic re-check) its token no longer authenticating, e.g. an
 * expired session.
 */
export const ACCESS_END_REASONS = ['signed_out', 'key_revoked', 'user_removed', 'account_deleted', 'agent_deleted', 'token_invalid'] as const;
export type AccessEndReason = (typeof ACCESS_END_REASONS)[number];

/** The data of the last event of a stream whose caller lost access, `event: access-ended`. */
export const StreamAccessEnded = Type.Object({ reason: StringEnum(ACCESS_END_REASONS) }, { $id: 'StreamAccessEnded' });
export type StreamAccessEnded = Static<typeof StreamAccessEnded>;

/** What every stream says of losing access, in its description. */
export const ACCESS_ENDED_TEXT =
  'When the token stops granting access (signed out, revoked, expired, its user removed, the account or agent deleted) the server ' +
  'sends `event: access-ended`, `data: StreamAccessEnded` within 5 seconds and closes the stream; reconnecting with that token gets 401 (404 for a deleted agent).';

/** What the log stream's response body is, for the OpenAPI document: a text of events whose data are LogEntry. */
export const LogEventStream = Type.String({
  description:
    'Server-sent events. Each entry: `id: <entry id>`, `event: log`, `data: LogEntry`; a new client gets the last `limit` entries ' +
    'first, a client sending `Last-Event-ID` everything after that entry. The server ends the stream when the agent is deleted. ' +
    `${ACCESS_ENDED_TEXT} Comment lines keep it alive.`,
});

/** What the metrics stream's response body is: a text of events whose data are MetricsSample. */
export const MetricsEventStream = Type.String({
  description:
    'Server-sent events. Every `interval` seconds: `event: metrics`, `data: MetricsSample`. The server ends the stream when the ' +
    `agent is deleted. ${ACCESS_ENDED_TEXT} Comment lines keep it alive.`,
});
