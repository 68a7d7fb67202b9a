import { Type, type Static } from '@sinclair/typebox';
import { ACCESS_MODES, AGENT_STATUSES } from '../domain/agent.js';
import { SCALE_TO_ZERO_AFTER_SECONDS, SESSION_TTL_SECONDS, WARM_PARK_SECONDS, type DeployRequest } from '../domain/deploy.js';
import { CANARY_BOUNDS, CANARY_DEFAULTS } from '../domain/canary.js';
import type { RegistryAuthInput } from '../domain/registry-auth.js';
import { INVOCATION_ID, LOG_LEVELS, LOG_SOURCES, type PublicLogEntry } from '../domain/log-entry.js';
import { NullableInteger, PAGE_FIELDS, PAGE_QUERY, StringEnum, Timestamp, type Holds, type SameType } from './common.js';
import * as ex from './examples.js';

// An OCI image reference: [registry[:port]/]path[:tag][@sha256:digest].
const IMAGE_REFERENCE =
  '^(?:[a-zA-Z0-9](?:[a-zA-Z0-9.-]*[a-zA-Z0-9])?(?::[0-9]+)?/)?[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*(?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(?:@sha256:[a-f0-9]{64})?$';

/** Accepted by the schema only so that the answer is the clear 501, not an unknown-field 422. */
const BuildPath = Type.String({ description: 'Not supported: answered with 501 BUILD_NOT_SUPPORTED' });

export const EnvEntryInput = Type.Object(
  {
    key: Type.String({ pattern: '^[A-Za-z_][A-Za-z0-9_]*$', maxLength: 128 }),
    value: Type.Optional(Type.String({
      maxLength: 32_768,
      description:
        'Required, except with secret: true, where leaving it out keeps the value stored for this key, so a client can resend the list it sees (secrets shown as ***) with one entry changed. With secret: true, the value once JSON-escaped must fit one 65,535-byte line, and all secret entries together at most 40 KiB of names and values: on Nomad they reach the container through one Variable (64 KiB, shared with the model key) rendered into an env file that go-envparse reads line by line (control/domain/secret-env-limits.ts)',
    })),
    secret: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);

export const ResourcesInput = Type.Object(
  {
    cpu: Type.Optional(Type.Number({ minimum: 0.1, maximum: 64, description: 'vCPUs per replica' })),
    memory_mb: Type.Optional(Type.Integer({ minimum: 64, maximum: 262_144, description: 'MiB per replica' })),
    gpu: Type.Optional(Type.Integer({ minimum: 0, maximum: 0, description: 'GPUs are not offered: only 0' })),
    disk_gb: Type.Optional(Type.Integer({ minimum: 1, maximum: 1024 })),
    ephemeral_storage_gb: Type.Optional(Type.Integer({ minimum: 1, maximum: 1024 })),
  },
  { additionalProperties: false },
);

/**
 * One object with every field optional, rather than a oneOf of the two kinds: ajv's errors
 * for a oneOf name neither branch clearly, so which fields go together is checked in the
 * domain (registry-auth.ts, `registryAuthIssues`), with a 422 at the field that is wrong.
 */
export const RegistryAuthInputSchema = Type.Unsafe<RegistryAuthInput | null>({
  type: ['object', 'null'],
  properties: {
    // Basic authentication sends `username:password`: a colon would split the name.
    username: { type: 'string', minLength: 1, maxLength: 256, pattern: '^[^:]+$', description: 'with password' },
    password: { type: 'string', minLength: 1, maxLength: 4096, description: 'with username' },
    identity_token: { type: 'string', minLength: 1, maxLength: 8192, description: 'alone: an OAuth2 refresh token of the registry (podman only: the Nomad docker driver takes a user name and password)' },
  },
  additionalProperties: false,
  writeOnly: true,
  description:
    'Credentials for the registry of `image`, which must then name its registry (`host[:port]/path`): `{username, password}` or `{identity_token}`. ' +
    'Write-only: sealed when received, sent only to that registry, never shown. Omitted, the stored ones are kept (a deploy that moves `image` to another registry must give them again); null drops them.',
});

/**
 * How the new version reaches callers (issue 36): `rolling` (the default) replaces the
 * replicas once the new ones are healthy; `canary` runs it beside the current version on
 * `replicas` of its own with `percent` of the requests, until it is promoted or aborted.
 */
export const DeployStrategyInput = Type.Union([
  Type.Object({ type: Type.Literal('rolling') }, { additionalProperties: false }),
  Type.Object(
    {
      type: Type.Literal('canary'),
      percent: Type.Integer({ minimum: CANARY_BOUNDS.percent.min, maximum: CANARY_BOUNDS.percent.max, description: "the share of the agent's allowed requests the new version gets" }),
      replicas: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, description: `the new version's replicas while the canary runs (default ${CANARY_DEFAULTS.replicas})` })),
      affinity: Type.Optional(StringEnum(['none', 'caller'] as const, { description: "caller: a caller (its access key, or its address on a public agent) stays on one version for the canary's life; default none" })),
      auto_promote_after_seconds: Type.Optional(NullableInteger({
        minimum: CANARY_BOUNDS.autoPromoteAfterSeconds.min,
        maximum: CANARY_BOUNDS.autoPromoteAfterSeconds.max,
        description: 'promoted this long after it started unless aborted first; null (the default): promote by hand',
      })),
      max_error_ratio: Type.Optional(Type.Number({ minimum: 0, maximum: 1, description: `aborted past this 5xx ratio over the last 60 s (default ${CANARY_DEFAULTS.maxErrorRatio}), or past twice the stable version's plus 0.01` })),
      min_requests: Type.Optional(Type.Integer({ minimum: CANARY_BOUNDS.minRequests.min, maximum: CANARY_BOUNDS.minRequests.max, description: `requests in the window before its ratio is judged (default ${CANARY_DEFAULTS.minRequests})` })),
    },
    { additionalProperties: false },
  ),
]);

export const DeployInput = Type.Object(
  {
    image: Type.Optional(Type.String({ maxLength: 512, pattern: IMAGE_REFERENCE, description: 'an image, public or with registry_auth; default: the platform runtime' })),
    port: Type.Optional(Type.Integer({ minimum: 1, maximum: 65535 })),
    replicas: Type.Optional(Type.Integer({ minimum: 0, maximum: 100 })),
    resources: Type.Optional(ResourcesInput),
    env: Type.Optional(Type.Array(EnvEntryInput, { maxItems: 100 })),
    auto_scale: Type.Optional(Type.Boolean()),
    min_replicas: Type.Optional(Type.Integer({ minimum: 0, maximum: 100, description: '0 only with auto_scale: true: the agent is parked at 0 replicas when idle and woken by its next request' })),
    max_replicas: Type.Optional(Type.Integer({ minimum: 1, maximum: 100 })),
    scale_to_zero_after_seconds: Type.Optional(Type.Integer({
      minimum: SCALE_TO_ZERO_AFTER_SECONDS.min,
      maximum: SCALE_TO_ZERO_AFTER_SECONDS.max,
      description: `seconds without edge requests after which an auto-scaled agent with min_replicas 0 goes to 0 replicas (default ${SCALE_TO_ZERO_AFTER_SECONDS.default})`,
    })),
    warm_park_seconds: Type.Optional(Type.Integer({
      minimum: WARM_PARK_SECONDS.min,
      maximum: WARM_PARK_SECONDS.max,
      description: `seconds a parked agent's replica stays frozen in memory (warm: woken in about a tenth of a second) before it is stopped (cold), 0 to a day (default ${WARM_PARK_SECONDS.default}); 0 parks cold at once. A warm-parked replica counts toward the plan's memory but not its replicas or replica hours. The podman driver only: on Nomad a parked agent is always cold (docs/scaling.md)`,
    })),
    session_ttl_seconds: Type.Optional(Type.Integer({
      minimum: SESSION_TTL_SECONDS.min,
      maximum: SESSION_TTL_SECONDS.max,
      description: `seconds a conversation session of the agent is kept after its last read or write, 60 to 30 days (default ${SESSION_TTL_SECONDS.default}); a change applies from each session's next use`,
    })),
    trace_content: Type.Optional(Type.Boolean({
      description: "whether the agent's traces may record message and tool text (TRACE_CONTENT in its containers); default false: spans hold models, tokens, timings and outcomes only",
    })),
    registry_auth: Type.Optional(RegistryAuthInputSchema),
    build_path: Type.Optional(BuildPath),
    strategy: Type.Optional(DeployStrategyInput),
  },
  {
    additionalProperties: false,
    examples: [
      { image: ex.deploy.image, replicas: 2, env: [{ key: 'LOG_LEVEL', value: 'info' }, { key: 'CRM_TOKEN', value: 'crm_live_5f2a9c', secret: true }] },
      { image: ex.deploy.image, strategy: { type: 'canary', percent: 10, affinity: 'caller', auto_promote_after_seconds: 600 } },
    ],
  },
);
export type DeployInput = Static<typeof DeployInput>;
/** Compiles only while the body's deploy is the domain's request (build_path is refused before it reaches the domain, strategy is how it rolls out). */
export type DeployInputIsDeployRequest = Holds<SameType<Omit<DeployInput, 'build_path' | 'strategy'>, DeployRequest>>;

export const CreateAgentBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 128 }),
    model: Type.Optional(Type.String({ minLength: 1, maxLength: 128 })),
    api_key: Type.Optional(Type.String({ minLength: 1, maxLength: 4096, writeOnly: true })),
    system_prompt: Type.Optional(Type.String({ maxLength: 32_000 })),
    access: Type.Optional(StringEnum(ACCESS_MODES)),
    rate_limit_rpm: Type.Optional(NullableInteger({ minimum: 1, maximum: 100_000 })),
    deploy: Type.Optional(DeployInput),
    tags: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 64 }), { maxItems: 50, uniqueItems: true })),
    metadata: Type.Optional(
      // propertyNames: TypeBox's Record keeps no limit given on its key schema.
      Type.Record(Type.String(), Type.String({ maxLength: 1024 }), { maxProperties: 50, propertyNames: { maxLength: 64, minLength: 1 } }),
    ),
    build_path: Type.Optional(BuildPath),
  },
  { additionalProperties: false, examples: [{ name: 'support-bot', model: 'claude-sonnet-4-5', api_key: 'sk-ant-api03-example', system_prompt: 'You answer Acme customer tickets politely.', access: 'private', rate_limit_rpm: 120, tags: ['support'], metadata: { team: 'customer-care' }, deploy: { image: ex.deploy.image, port: 8080, replicas: 2, resources: { cpu: 0.5, memory_mb: 512 } } }] },
);
export type CreateAgentBody = Static<typeof CreateAgentBody>;

export const PatchAgentBody = Type.Object(
  {
    access: Type.Optional(StringEnum(ACCESS_MODES)),
    rate_limit_rpm: Type.Optional(NullableInteger({ minimum: 1, maximum: 100_000 })),
  },
  { additionalProperties: false, examples: [{ access: 'public', rate_limit_rpm: 300 }] },
);
export type PatchAgentBody = Static<typeof PatchAgentBody>;

export const ListAgentsQuery = Type.Object({
  status: Type.Optional(StringEnum(AGENT_STATUSES)),
  tag: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
  ...PAGE_QUERY,
});
export type ListAgentsQuery = Static<typeof ListAgentsQuery>;

const EnvEntry = Type.Object({
  key: Type.String(),
  value: Type.String({ description: '*** for secret entries' }),
  secret: Type.Boolean(),
});

export const Deploy = Type.Object(
  {
    image: Type.String(),
    port: Type.Integer(),
    replicas: Type.Integer(),
    resources: Type.Object({
      cpu: Type.Number(),
      memory_mb: Type.Integer(),
      gpu: Type.Integer(),
      disk_gb: Type.Integer(),
      ephemeral_storage_gb: Type.Integer(),
    }),
    env: Type.Array(EnvEntry),
    auto_scale: Type.Boolean(),
    min_replicas: Type.Integer(),
    max_replicas: Type.Integer(),
    scale_to_zero_after_seconds: Type.Integer(),
    warm_park_seconds: Type.Integer(),
    session_ttl_seconds: Type.Integer(),
    trace_content: Type.Boolean(),
  },
  { $id: 'Deploy', examples: [ex.deploy] },
);
export type Deploy = Static<typeof Deploy>;

export const Agent = Type.Object(
  {
    id: Type.String(),
    name: Type.String(),
    runtime: StringEnum(['node', 'container'] as const),
    framework: StringEnum(['platform', 'custom'] as const),
    model: Type.String(),
    status: StringEnum(AGENT_STATUSES),
    url: Type.String(),
    access: StringEnum(ACCESS_MODES),
    rate_limit_rpm: Type.Union([Type.Integer(), Type.Null()]),
    access_key: Type.Union([Type.String(), Type.Null()], { description: 'the first key, only in the create response of a private agent' }),
    replicas: Type.Integer(),
    deploy: Type.Ref(Deploy),
    tags: Type.Array(Type.String()),
    metadata: Type.Record(Type.String(), Type.String()),
    error: Type.Union([Type.String(), Type.Null()]),
    version: Type.Integer(),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { $id: 'Agent', examples: [ex.agent] },
);
export type Agent = Static<typeof Agent>;

export const AgentList = Type.Object(
  {
    agents: Type.Array(Type.Ref(Agent)),
    ...PAGE_FIELDS,
  },
  { $id: 'AgentList', examples: [{ agents: [ex.agent], ...ex.onePage }] },
);

export const ScaleBody = Type.Object(
  {
    direction: StringEnum(['up', 'down'] as const),
    count: Type.Integer({ minimum: 1, maximum: 100, description: 'replicas to add or remove' }),
  },
  { additionalProperties: false, examples: [{ direction: 'up', count: 1 }] },
);
export type ScaleBody = Static<typeof ScaleBody>;

export const ScaleResult = Type.Object(
  {
    agent_id: Type.String(),
    previous_replicas: Type.Integer(),
    current_replicas: Type.Integer(),
    direction: StringEnum(['up', 'down'] as const),
    status: StringEnum(AGENT_STATUSES),
  },
  { $id: 'ScaleResult', examples: [{ agent_id: ex.ids.agent, previous_replicas: 2, current_replicas: 3, direction: 'up', status: 'scaling' }] },
);
export type ScaleResult = Static<typeof ScaleResult>;

export const LogsQuery = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })),
  level: Type.Optional(StringEnum(LOG_LEVELS, { description: 'the lowest level shown' })),
  replica_id: Type.Optional(Type.String({ minLength: 1, maxLength: 128 })),
  invocation_id: Type.Optional(Type.String({ pattern: '^[0-9a-fA-F]{32}$', description: 'only the lines written in this invocation (32 hex, its trace id)' })),
});
export type LogsQuery = Static<typeof LogsQuery>;

export const LogEntry = Type.Object(
  {
    agent_id: Type.String(),
    replica_id: Type.String(),
    timestamp: Timestamp,
    level: StringEnum(LOG_LEVELS),
    message: Type.String(),
    source: StringEnum(LOG_SOURCES),
    invocation_id: Type.Union([Type.String({ pattern: INVOCATION_ID.source }), Type.Null()], {
      description: "the invocation the line was written in: a JSON line's `trace_id` when it is 32 lowercase hex digits, else null",
    }),
  },
  { $id: 'LogEntry', examples: [ex.logEntry] },
);
/** Compiles only while the documented entry is the domain's (control/domain/log-entry.ts). */
export type LogEntryIsPublicLogEntry = Holds<SameType<Static<typeof LogEntry>, PublicLogEntry>>;

export const LogList = Type.Object({ logs: Type.Array(Type.Ref(LogEntry)), total: Type.Integer() }, { $id: 'LogList', examples: [{ logs: [ex.logEntry], total: 1 }] });

export const MetricsStreamQuery = Type.Object({
  interval: Type.Optional(Type.Integer({ minimum: 1, maximum: 60, description: 'seconds between samples (default 5)' })),
});
export type MetricsStreamQuery = Static<typeof MetricsStreamQuery>;

export const MetricsSample = Type.Object(
  {
    agent_id: Type.String(),
    timestamp: Timestamp,
    cpu_percent: Type.Number({ description: 'average across replicas, percent of one core' }),
    memory_mb: Type.Number({ description: 'average across replicas' }),
    memory_percent: Type.Number({ description: 'average across replicas, of the memory limit' }),
    replicas: Type.Integer(),
    request_count: Type.Integer({
      minimum: 0,
      description:
        'requests the edge forwarded to the agent and the agent answered, over the last 60 s (denied requests and the edge\'s own 502/503 are not counted); the edge reports each second within about a second',
    }),
    error_count: Type.Integer({ minimum: 0, description: 'of request_count, the answers with a 5xx status from the agent' }),
    avg_latency_ms: Type.Number({
      minimum: 0,
      description: 'mean upstream time of request_count, from the edge sending the request to the agent\'s last response byte; 0 without requests',
    }),
    p95_latency_ms: Type.Number({
      minimum: 0,
      description: '95th percentile of the same upstream times, interpolated within fixed latency buckets (as Prometheus\'s histogram_quantile); 0 without requests',
    }),
  },
  { $id: 'MetricsSample', examples: [ex.metricsSample] },
);
export type MetricsSample = Static<typeof MetricsSample>;
