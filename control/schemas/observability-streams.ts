import { Type } from '@sinclair/typebox';

/** What the log stream's response body is, for the OpenAPI document: a text of events whose data are LogEntry. */
export const LogEventStream = Type.String({
  description:
    'Server-sent events. Each entry: `id: <entry id>`, `event: log`, `data: LogEntry`; a new client gets the last `limit` entries ' +
    'first, a client sending `Last-Event-ID` everything after that entry. The server ends the stream when the agent is deleted. ' +
    'Comment lines keep it alive.',
});

/** What the metrics stream's response body is: a text of events whose data are MetricsSample. */
export const MetricsEventStream = Type.String({
  description:
    'Server-sent events. Every `interval` seconds: `event: metrics`, `data: MetricsSample`. The server ends the stream when the ' +
    'agent is deleted. Comment lines keep it alive.',
});
