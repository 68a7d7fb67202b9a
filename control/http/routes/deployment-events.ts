import type { DeploymentEventRow } from '../../domain/deployment.js';
import type { DeploymentEventFeed } from '../../services/deployment-event-feed.js';
import type { DeploymentHistoryService } from '../../services/deployment-history.js';
import type { OpenStreams } from '../../services/open-streams.js';
import { ErrorBody } from '../../schemas/common.js';
import { DeploymentEventStream, type DeploymentProgress } from '../../schemas/deployment-events.js';
import { defineRoute } from '../route.js';
import { SSE_HEADERS, sseStream, type SseEvent } from '../sse.js';

const notFound = { description: 'NOT_FOUND: no such agent in your account; DEPLOYMENT_NOT_FOUND: the agent has no such deployment', schema: ErrorBody };

export const deploymentEventRoutes = (history: DeploymentHistoryService, feed: DeploymentEventFeed, streams: Pick<OpenStreams, 'open'>) => [
  defineRoute({
    method: 'get',
    path: '/agents/:id/deployments/:deploymentId/events',
    operationId: 'streamDeploymentEvents',
    tag: 'Deployments',
    summary: "Stream a deployment's progress",
    description:
      'Server-sent events of the rollout: `progress` (queued, pulling, starting, health_check, routing, draining, succeeded, failed), ' +
      'past ones first (send Last-Event-ID to resume after one), then live; a last `end` with the status, then the stream ends ' +
      '(or `access-ended` when the token stops granting access)',
    auth: 'any',
    reads: ['Last-Event-ID'],
    responses: { 200: { description: 'The rollout events', schema: DeploymentEventStream, contentType: 'text/event-stream' }, 404: notFound },
    handler: async ({ principal, params, lastEventId }) => {
      const deployment = await history.find(principal, params.id!, params.deploymentId!);
      const after = resumeAfter(lastEventId);
      async function* frames(signal: AbortSignal): AsyncIterable<SseEvent> {
        for await (const item of feed.follow(deployment, after, signal)) {
          yield item.kind === 'progress' ? { event: 'progress', id: String(item.event.id), data: progressData(item.event) } : { event: 'end', data: { status: item.status } };
        }
      }
      return { status: 200, headers: SSE_HEADERS, body: sseStream(frames, { lease: streams.open(principal, deployment.agent_id) }).stream };
    },
  }),
];

/** Event ids are positive integers; anything else replays from the start. */
function resumeAfter(lastEventId: string | undefined): number {
  const id = Number(lastEventId);
  return Number.isSafeInteger(id) && id > 0 ? id : 0;
}

const progressData = ({ phase, replica_id, message, at }: DeploymentEventRow): DeploymentProgress => ({
  phase,
  ...(replica_id === null ? {} : { replica_id }),
  message,
  at: at.toISOString(),
});
