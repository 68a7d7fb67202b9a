import type { ObservabilityService } from '../../services/observability-service.js';
import type { OpenStreams } from '../../services/open-streams.js';
import { LogList, LogsQuery, MetricsSample, MetricsStreamQuery } from '../../schemas/agents.js';
import { ErrorBody } from '../../schemas/common.js';
import { LogEventStream, MetricsEventStream } from '../../schemas/observability-streams.js';
import { defineRoute } from '../route.js';
import { pause, SSE_HEADERS, sseStream, type SseEvent } from '../sse.js';

const notFound = { description: 'NOT_FOUND: no such agent in your account', schema: ErrorBody };
const LOG_POLL_MS = 1000;

export const observabilityRoutes = (observability: ObservabilityService, streams: Pick<OpenStreams, 'open'>) => [
  defineRoute({
    method: 'get',
    path: '/agents/:id/logs',
    operationId: 'listAgentLogs',
    tag: 'Observability',
    summary: "List an agent's recent logs",
    description: 'Recent container output of every replica, newest last; `level` is the lowest level shown, `invocation_id` keeps the lines written in one invocation',
    auth: 'any',
    query: LogsQuery,
    responses: { 200: { description: 'Log entries', schema: LogList }, 404: notFound },
    handler: async ({ principal, params, query }) => ({ status: 200, body: await observability.logs(principal, params.id!, query) }),
  }),
  defineRoute({
    method: 'get',
    path: '/agents/:id/logs/stream',
    operationId: 'streamAgentLogs',
    tag: 'Observability',
    summary: "Stream an agent's logs",
    description: 'Server-sent events `log` with an id each (send Last-Event-ID to resume); ends when the agent is deleted, or with `access-ended` when the token stops granting access',
    auth: 'any',
    query: LogsQuery,
    reads: ['Last-Event-ID'],
    responses: { 200: { description: 'The log events', schema: LogEventStream, contentType: 'text/event-stream' }, 404: notFound },
    handler: async ({ principal, params, query, lastEventId }) => {
      await observability.assertAgentOf(principal, params.id!);
      const agentId = params.id!;
      async function* follow(signal: AbortSignal): AsyncIterable<SseEvent> {
        let after = lastEventId ?? '';
        let first = lastEventId === undefined;
        while (!signal.aborted) {
          const entries = await observability.entries(agentId, query);
          // A new client starts with the last `limit` entries; a resuming one gets everything after its id.
          const fresh = first ? entries.slice(-(query.limit ?? 100)) : entries.filter((entry) => entry.id > after);
          first = false;
          for (const { id, ...entry } of fresh) {
            after = id;
            yield { event: 'log', id, data: entry };
          }
          if (!(await observability.exists(principal, agentId))) return;
          await pause(LOG_POLL_MS, signal);
        }
      }
      return { status: 200, headers: SSE_HEADERS, body: sseStream(follow, { lease: streams.open(principal, agentId) }).stream };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/agents/:id/metrics',
    operationId: 'getAgentMetrics',
    tag: 'Observability',
    summary: "Get an agent's metrics",
    description: 'One sample of live CPU and memory, averaged over replicas',
    auth: 'any',
    responses: { 200: { description: 'A metrics sample', schema: MetricsSample }, 404: notFound },
    handler: async ({ principal, params }) => ({ status: 200, body: await observability.metrics(principal, params.id!) }),
  }),
  defineRoute({
    method: 'get',
    path: '/agents/:id/metrics/stream',
    operationId: 'streamAgentMetrics',
    tag: 'Observability',
    summary: "Stream an agent's metrics",
    description: 'Server-sent events `metrics`, one sample every `interval` seconds (1–60, default 5); ends with `access-ended` when the token stops granting access',
    auth: 'any',
    query: MetricsStreamQuery,
    responses: { 200: { description: 'The metrics events', schema: MetricsEventStream, contentType: 'text/event-stream' }, 404: notFound },
    handler: async ({ principal, params, query }) => {
      await observability.assertAgentOf(principal, params.id!);
      const agentId = params.id!;
      const intervalMs = (query.interval ?? 5) * 1000;
      async function* samples(signal: AbortSignal): AsyncIterable<SseEvent> {
        while (!signal.aborted) {
          if (!(await observability.exists(principal, agentId))) return;
          yield { event: 'metrics', data: await observability.sample(agentId) };
          await pause(intervalMs, signal);
        }
      }
      return { status: 200, headers: SSE_HEADERS, body: sseStream(samples, { lease: streams.open(principal, agentId) }).stream };
    },
  }),
];
