import { Type, type Static } from '@sinclair/typebox';
import { DEPLOYMENT_STATUSES, ROLLOUT_PHASES } from '../domain/deployment.js';
import { StringEnum, Timestamp } from './common.js';
import { ACCESS_ENDED_TEXT, AccessEndedEvent, EventStream, StreamEvent } from './observability-streams.js';

/** The data of an `event: progress` of a deployment's stream. */
export const DeploymentProgress = Type.Object(
  {
    phase: StringEnum(ROLLOUT_PHASES),
    replica_id: Type.Optional(Type.String({ description: 'the replica (podman container, Nomad allocation) the step is about; absent for a step of the whole job' })),
    message: Type.String(),
    at: Timestamp,
  },
  { $id: 'DeploymentProgress' },
);
export type DeploymentProgress = Static<typeof DeploymentProgress>;

/** The data of the last event of a deployment's stream, `event: end`. */
export const DeploymentStreamEnd = Type.Object({ status: StringEnum(DEPLOYMENT_STATUSES) }, { $id: 'DeploymentStreamEnd' });
export type DeploymentStreamEnd = Static<typeof DeploymentStreamEnd>;

/** What the stream's response body is, for the OpenAPI document: events whose data are the two schemas above. */
export const DeploymentEventStream = EventStream(
    'Server-sent events. Each step: `id: <event id>`, `event: progress`, `data: DeploymentProgress`; past steps are replayed first, ' +
    'or those after `Last-Event-ID`. Last: `event: end`, `data: DeploymentStreamEnd` (after a `succeeded` or `failed` step, ' +
    'or when the deployment ended without one: superseded, cancelled); then the server closes the stream. ' +
    `${ACCESS_ENDED_TEXT} Comment lines keep it alive.`,
  [StreamEvent('progress', Type.Ref(DeploymentProgress), true), StreamEvent('end', Type.Ref(DeploymentStreamEnd), false), AccessEndedEvent],
  [
    { id: '41', event: 'progress', data: { phase: 'pulling', message: 'pulling ghcr.io/acme/support-bot:1.4.0', at: '2025-12-01T09:30:01Z' } },
    { id: '42', event: 'progress', data: { phase: 'succeeded', message: '2 of 2 replicas healthy and routed', at: '2025-12-01T09:30:14Z' } },
    { event: 'end', data: { status: 'succeeded' } },
  ],
);
