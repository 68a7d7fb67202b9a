import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { DEPLOYMENT_STATUSES } from '../domain/deployment.js';
import { Deploy } from './agents.js';
import { PAGE_FIELDS, PAGE_QUERY, StringEnum, Timestamp } from './common.js';
import * as ex from './examples.js';

const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);

/** A canary deployment's settings, defaults filled in (null on a rolling deployment). */
export const CanaryStrategy = Type.Object(
  {
    type: Type.Literal('canary'),
    percent: Type.Integer(),
    replicas: Type.Integer(),
    affinity: StringEnum(['none', 'caller'] as const),
    auto_promote_after_seconds: Type.Union([Type.Integer(), Type.Null()]),
    max_error_ratio: Type.Number(),
    min_requests: Type.Integer(),
  },
  { description: "a canary deployment's settings" },
);

const VersionFigures = Type.Object({
  request_count: Type.Integer({ description: 'requests the edge forwarded to this version in the last 60 s' }),
  error_count: Type.Integer({ description: 'of which answered 5xx' }),
  avg_latency_ms: Type.Number(),
  p95_latency_ms: Type.Number(),
});

/** A running canary: when it started, its preview URL and both versions' figures. */
export const CanaryState = Type.Object(
  {
    started_at: Type.String({ format: 'date-time', description: 'when the canary began to serve (its replicas routable, the `canary` event): auto_promote_after_seconds counts from here' }),
    preview_url: Type.String({ description: 'reaches only the new version, with the agent\'s access rules' }),
    percent: Type.Integer(),
    figures: Type.Object({ stable: VersionFigures, canary: VersionFigures }),
  },
  { description: 'the running canary' },
);

/** One rollout of an agent as the API shows it: the configuration it rolled out (secrets masked) and how it went. */
export const Deployment = Type.Object(
  {
    id: Type.String(),
    agent_id: Type.String(),
    number: Type.Integer({ minimum: 1, description: '1, 2, 3 … per agent' }),
    agent_version: Type.Integer({ description: "the agent's version this deployment rolled out" }),
    status: StringEnum(DEPLOYMENT_STATUSES),
    image: Type.String({ description: 'deploy.image, repeated for lists' }),
    deploy: Type.Ref(Deploy),
    model: Type.String(),
    system_prompt_sha256: Nullable(Type.String({ description: 'hex SHA-256 of the system prompt (UTF-8); null when there is none' })),
    rollback_of: Nullable(Type.String({ description: 'the deployment whose configuration a rollback restored' })),
    created_by: Nullable(Type.String({ description: 'the user who deployed (directly or through a personal API key)' })),
    created_at: Timestamp,
    finished_at: Type.Union([Timestamp, Type.Null()], { description: 'null while in_progress' }),
    error: Nullable(Type.String()),
    nomad_job_version: Nullable(Type.Integer({ description: "Nomad's job version of this rollout, for the Nomad UI; null on podman and until Nomad has it" })),
    strategy: Nullable(CanaryStrategy),
    phase: Nullable(StringEnum(['canary'] as const, { description: 'canary: the new version runs beside the old with its share of requests, until promoted or aborted' })),
    canary: Nullable(CanaryState),
  },
  { $id: 'Deployment', examples: [ex.deployment] },
);
export type Deployment = Static<typeof Deployment>;

export const DeploymentList = Type.Object({ deployments: Type.Array(Type.Ref(Deployment)), ...PAGE_FIELDS }, { $id: 'DeploymentList', examples: [{ deployments: [ex.deployment], ...ex.onePage }] });
export type DeploymentList = Static<typeof DeploymentList>;

export const ListDeploymentsQuery = Type.Object({ ...PAGE_QUERY });
export type ListDeploymentsQuery = Static<typeof ListDeploymentsQuery>;

export const RollbackBody = Type.Object(
  { deployment_id: Type.String({ minLength: 1, maxLength: 64, description: 'a deployment of this agent (GET /agents/{id}/deployments)' }) },
  { additionalProperties: false, examples: [{ deployment_id: ex.ids.previousDeployment }] },
);
export type RollbackBody = Static<typeof RollbackBody>;
