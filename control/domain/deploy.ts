import type { SecretBox } from '../crypto/secret-box.js';
import { validationError, type ValidationIssue } from './errors.js';
import { registryAuthIssues, registryOf, sealRegistryAuth, type RegistryAuthInput, type StoredRegistryAuth } from './registry-auth.js';
import { secretEnvIssues } from './secret-env-limits.js';

/** An env entry as stored: a secret keeps only its sealed (encrypted) value. */
export type StoredEnvEntry = { key: string; secret: false; value: string } | { key: string; secret: true; sealed: string };

export interface StoredDeploy {
  /** null: the platform's runtime image, whichever it is at deploy time. */
  image: string | null;
  port: number;
  replicas: number;
  resources: { cpu: number; memory_mb: number; gpu: number; disk_gb: number; ephemeral_storage_gb: number };
  env: StoredEnvEntry[];
  auto_scale: boolean;
  min_replicas: number;
  max_replicas: number;
  /** Absent from deploys stored before scale to zero existed: DEFAULT_SCALE_TO_ZERO_AFTER_SECONDS. */
  scale_to_zero_after_seconds?: number;
  /** Absent from deploys stored before warm parking existed: WARM_PARK_SECONDS.default. */
  warm_park_seconds?: number;
  /** Absent from deploys stored before sessions existed: SESSION_TTL_SECONDS.default. */
  session_ttl_seconds?: number;
  /** Absent from deploys stored before traces existed: false. Whether the runtime's spans may carry message and tool text. */
  trace_content?: boolean;
  /** Credentials for the image's registry, sealed; absent (or null) without. Never shown. */
  registry_auth?: StoredRegistryAuth | null;
}

/** A deploy as asked for: any field left out keeps its value; env values still in the clear. */
export interface DeployRequest {
  image?: string;
  port?: number;
  replicas?: number;
  resources?: Partial<StoredDeploy['resources']>;
  /** A secret entry without a value keeps the value stored for its key (a client never sees it again to resend it). */
  env?: { key: string; value?: string; secret?: boolean }[];
  auto_scale?: boolean;
  min_replicas?: number;
  max_replicas?: number;
  scale_to_zero_after_seconds?: number;
  warm_park_seconds?: number;
  session_ttl_seconds?: number;
  trace_content?: boolean;
  /** Credentials for the image's registry; null removes the stored ones, omitted keeps them. */
  registry_auth?: RegistryAuthInput | null;
}

/** Seconds without edge requests before an auto-scaled agent with min_replicas 0 is parked (docs/autoscaling.md). */
export const SCALE_TO_ZERO_AFTER_SECONDS = { default: 300, min: 30, max: 86_400 } as const;

/** The idle period of a stored deploy, whenever it was stored. */
export const scaleToZeroAfterSeconds = (deploy: StoredDeploy): number =>
  deploy.scale_to_zero_after_seconds ?? SCALE_TO_ZERO_AFTER_SECONDS.default;

/**
 * How long a parked agent stays warm-parked (its container frozen, memory kept) before it is
 * cold-parked (nothing runs), on drivers that can freeze a replica (docs/scaling.md, "Warm
 * and cold parking"); 0 parks it cold at once.
 */
export const WARM_PARK_SECONDS = { default: 600, min: 0, max: 86_400 } as const;

/** The warm parking period of a stored deploy, whenever it was stored. */
export const warmParkSeconds = (deploy: StoredDeploy): number => deploy.warm_park_seconds ?? WARM_PARK_SECONDS.default;

/** How long an agent's session lives after its last read or write (docs/contract.md, "Sessions API v1"): a minute to 30 days. */
export const SESSION_TTL_SECONDS = { default: 86_400, min: 60, max: 2_592_000 } as const;

/** The session time to live of a stored deploy, whenever it was stored. */
export const sessionTtlSeconds = (deploy: StoredDeploy): number => deploy.session_ttl_seconds ?? SESSION_TTL_SECONDS.default;

/** Whether the agent's traces may hold message and tool text (docs/traces.md), whenever its deploy was stored: off unless asked. */
export const traceContent = (deploy: StoredDeploy): boolean => deploy.trace_content ?? false;

/** Whether the platform parks the agent at 0 replicas when idle and wakes it on a request. */
export const scalesToZero = (deploy: StoredDeploy): boolean => deploy.auto_scale && deploy.min_replicas === 0;

/**
 * Variables the platform sets itself; deploy.env may not override them. The agent services'
 * (issue 37) are the drivers': a replica reaches its sessions with them.
 */
export const RESERVED_ENV_KEYS = [
  'AGENT_ID', 'AGENT_NAME', 'SYSTEM_PROMPT', 'LLM_MODEL', 'LLM_PROVIDER',
  'AGENT_SERVICES_URL', 'AGENT_SERVICES_TOKEN_FILE', 'SESSION_MAX_BYTES', 'TRACE_CONTENT',
] as const;

export const DEFAULT_DEPLOY: Readonly<StoredDeploy> = Object.freeze({
  image: null,
  port: 8080,
  replicas: 1,
  resources: { cpu: 1.0, memory_mb: 512, gpu: 0, disk_gb: 1, ephemeral_storage_gb: 1 },
  env: [],
  auto_scale: false,
  min_replicas: 1,
  max_replicas: 10,
  scale_to_zero_after_seconds: SCALE_TO_ZERO_AFTER_SECONDS.default,
  warm_park_seconds: WARM_PARK_SECONDS.default,
  session_ttl_seconds: SESSION_TTL_SECONDS.default,
  trace_content: false,
});

/** What the orchestrator in use can deliver, so a deploy it could not run is refused with a 422 rather than failing later. */
export interface DeployRules {
  /** Nomad's docker driver takes registry credentials as a user name and password only (docs/decisions.md). */
  identityTokens: boolean;
}

export const ANY_ORCHESTRATOR: DeployRules = Object.freeze({ identityTokens: true });

/**
 * The deploy object to store: `input` over `base` (the defaults on create, the current
 * deploy on redeploy), so omitted fields keep their values. A given `env` replaces the
 * whole list; its secret values are sealed here and never stored in the clear.
 */
export function resolveDeploy(input: DeployRequest | undefined, base: StoredDeploy, box: SecretBox, rules: DeployRules = ANY_ORCHESTRATOR): StoredDeploy {
  const given = withKeptSecrets(input ?? {}, base.env, box);
  const resolved: StoredDeploy = {
    image: given.image ?? base.image,
    port: given.port ?? base.port,
    replicas: given.replicas ?? base.replicas,
    resources: { ...base.resources, ...given.resources },
    env: given.env ? given.env.map((entry) => sealEntry(entry, box)) : base.env,
    auto_scale: given.auto_scale ?? base.auto_scale,
    min_replicas: given.min_replicas ?? base.min_replicas,
    max_replicas: given.max_replicas ?? base.max_replicas,
    scale_to_zero_after_seconds: given.scale_to_zero_after_seconds ?? scaleToZeroAfterSeconds(base),
    warm_park_seconds: given.warm_park_seconds ?? warmParkSeconds(base),
    session_ttl_seconds: given.session_ttl_seconds ?? sessionTtlSeconds(base),
    trace_content: given.trace_content ?? traceContent(base),
  };
  assertConsistent(resolved, given);
  const registry_auth = resolveRegistryAuth(given, resolved.image, base.registry_auth ?? null, box, rules);
  return registry_auth ? { ...resolved, registry_auth } : resolved;
}

/**
 * The registry credentials to store: given ones sealed for the image's registry, null to
 * drop them, or the stored ones kept. Stored credentials go only to the registry they were
 * given for: a deploy that moves the image to another registry must give registry_auth
 * again (or null), so credentials one member stored never reach a registry another chose.
 */
function resolveRegistryAuth(given: DeployRequest, image: string | null, stored: StoredRegistryAuth | null, box: SecretBox, rules: DeployRules): StoredRegistryAuth | null {
  const at = (...path: (string | number)[]) => ['body', 'deploy', ...path];
  if (given.registry_auth === null) return null;
  if (given.registry_auth !== undefined) {
    const issues = registryAuthIssues(given.registry_auth, image, at);
    if (given.registry_auth.identity_token !== undefined && !rules.identityTokens) {
      issues.push({
        loc: at('registry_auth', 'identity_token'),
        msg: "this platform runs agents on Nomad, whose docker driver takes registry credentials as username and password only: give those (many registries accept a token as the password)",
        type: 'value_error',
      });
    }
    if (issues.length > 0) throw validationError(issues);
    return sealRegistryAuth(given.registry_auth, image!, box);
  }
  if (stored && (image === null || registryOf(image) !== stored.registry)) {
    throw validationError([{
      loc: at(given.image !== undefined ? 'image' : 'registry_auth'),
      msg: `the stored registry_auth is for ${stored.registry}; with an image from ${image === null ? "the platform's runtime" : (registryOf(image) ?? 'an unnamed registry')}, give registry_auth again, or null to drop it`,
      type: 'value_error',
    }]);
  }
  return stored;
}

type ClearEnvEntry = { key: string; value: string; secret?: boolean };
type ClearDeployRequest = Omit<DeployRequest, 'env'> & { env?: ClearEnvEntry[] };

/**
 * `given` with each value-less secret entry holding the value stored for its key, opened
 * so that it is measured (secretEnvIssues) and sealed again like a given one. This is
 * what lets a client change one variable and send the rest of the list as it sees it
 * (secrets as keys only): `agentctl env set` / `secrets set` (docs/cli.md).
 */
function withKeptSecrets(given: DeployRequest, stored: readonly StoredEnvEntry[], box: SecretBox): ClearDeployRequest {
  if (!given.env) return given as ClearDeployRequest;
  const issues: ValidationIssue[] = [];
  const env = given.env.map((entry, index): ClearEnvEntry => {
    if (entry.value !== undefined) return { ...entry, value: entry.value };
    const kept = stored.find((candidate) => candidate.key === entry.key);
    if (entry.secret && kept?.secret) return { key: entry.key, secret: true, value: box.open(kept.sealed) };
    issues.push({
      loc: ['body', 'deploy', 'env', index, 'value'],
      msg: entry.secret ? `${entry.key} has no stored secret value to keep: give its value` : 'a value is required, except on a secret entry, which then keeps its stored value',
      type: 'value_error',
    });
    return { key: entry.key, value: '' };
  });
  if (issues.length > 0) throw validationError(issues);
  return { ...given, env };
}

function sealEntry(entry: ClearEnvEntry, box: SecretBox): StoredEnvEntry {
  return entry.secret
    ? { key: entry.key, secret: true, sealed: box.seal(entry.value) }
    : { key: entry.key, secret: false, value: entry.value };
}

/** Rules across fields that a JSON Schema cannot say; reported as 422 at the field that breaks them. */
function assertConsistent(deploy: StoredDeploy, given: ClearDeployRequest): void {
  const issues: ValidationIssue[] = [];
  const at = (...path: (string | number)[]) => ['body', 'deploy', ...path];
  if (deploy.min_replicas > deploy.max_replicas) {
    issues.push({ loc: at(given.min_replicas !== undefined ? 'min_replicas' : 'max_replicas'), msg: 'min_replicas must not exceed max_replicas', type: 'value_error' });
  }
  // Only the platform parks an agent at 0 (idle, woken by its next request): without auto_scale nothing would.
  if (deploy.min_replicas === 0 && !deploy.auto_scale) {
    issues.push({ loc: at(given.min_replicas !== undefined ? 'min_replicas' : 'auto_scale'), msg: 'min_replicas may be 0 only with auto_scale: true (scale to zero is done by the auto-scaler)', type: 'value_error' });
  }
  if (deploy.replicas > deploy.max_replicas) {
    issues.push({ loc: at(given.replicas !== undefined ? 'replicas' : 'max_replicas'), msg: `replicas must not exceed max_replicas (${deploy.max_replicas})`, type: 'value_error' });
  }
  const seen = new Set<string>();
  (given.env ?? []).forEach((entry, index) => {
    if ((RESERVED_ENV_KEYS as readonly string[]).includes(entry.key)) {
      issues.push({ loc: at('env', index, 'key'), msg: `${entry.key} is set by the platform and cannot be overridden`, type: 'value_error' });
    }
    if (seen.has(entry.key)) {
      issues.push({ loc: at('env', index, 'key'), msg: `${entry.key} appears more than once`, type: 'value_error' });
    }
    seen.add(entry.key);
  });
  issues.push(...secretEnvIssues(given.env ?? [], at));
  if (issues.length > 0) throw validationError(issues);
}

/** Agent labels: which runtime serves the agent and who made what runs in it. */
export function runtimeLabels(deploy: StoredDeploy): { runtime: 'node' | 'container'; framework: 'platform' | 'custom' } {
  return deploy.image === null ? { runtime: 'node', framework: 'platform' } : { runtime: 'container', framework: 'custom' };
}
