import { readFileSync } from 'node:fs';
import { readNomadSettings, type NomadSettings } from '../orchestrator/nomad/settings.js';
import { readPodmanSettings, type LoadedPodmanSettings } from '../orchestrator/podman/settings.js';
import { ConfigError, readSettings, SettingReader, type Env } from '../../contract/settings-reader.js';
import { readMasterKeys } from './master-key-settings.js';
import { readTraceSettings, type TraceSettings } from './trace-settings.js';
import type { ClientLimits } from '../http/client-limits.js';
import { keyPrefixProblem } from '../../contract/key-prefix.js';
import { LOCAL_RUNTIME_IMAGE, mutableImageProblem } from './runtime-image.js';
import type { DatabaseClientTimeouts } from '../db/database.js';
import type { SessionLimits } from '../domain/agent-session.js';

/**
 * Every setting of the control API, read from the environment once at start.
 * Nothing else reads process.env: the rest of the code receives this object.
 */
export interface Config {
  readonly host: string;
  readonly port: number;
  /** Prometheus metrics (GET /metrics) on the control host, apart from the API port. */
  readonly metricsPort: number;
  readonly databaseUrl: string;
  /** Postgres cancels a statement of the control API that runs longer (a lock wait or a runaway plan); migrations are exempt. */
  readonly databaseStatementTimeoutMs: number;
  /** How long the control API waits on Postgres before it answers 503 DATABASE_UNAVAILABLE (a stalled or unreachable server). */
  readonly databaseTimeouts: DatabaseClientTimeouts;
  readonly redisUrl: string;
  /** How long one Redis command may wait for its reply; a connection silent that long is dropped and reopened (control/db/redis.ts). */
  readonly redisCommandTimeoutMs: number;
  /** How long a request waits for its token's rate-limit count before it goes on without it (as when Redis is down). */
  readonly tokenRateLimitTimeoutMs: number;
  /** Put before every Redis key of the control API and authz, so installations (or test suites) can share one Redis. */
  readonly redisKeyPrefix: string;
  /** 32 bytes each for AES-256-GCM, the current key first; encrypt model keys and secret env values at rest (control/config/master-key-settings.ts). */
  readonly masterKeys: readonly Buffer[];
  readonly registrationMode: RegistrationMode;
  readonly agentUrl: AgentUrlSettings;
  /** The image an agent runs when its deploy object names none. */
  readonly runtimeImage: string;
  readonly sessionTtlMinutes: number;
  readonly tokenRateLimitPerMinute: number;
  readonly loginRateLimitPerMinute: number;
  /** Registrations per client address per hour, so one address cannot mint accounts to multiply the per-token limit. */
  readonly registrationRateLimitPerHour: number;
  /** SSO sign-ins started per client address per minute: each start stores a pending sign-in before anyone is known. */
  readonly ssoStartRateLimitPerMinute: number;
  /** Trust X-Forwarded-For for the client address (only behind a proxy you run). */
  readonly trustProxy: boolean;
  /**
   * Where clients reach the control API (`https://api.example.com`, no /v1): the OpenAPI document's server URL
   * (with /v1 added). Null: the document names a relative `/v1`, never the bind address.
   */
  readonly publicApiUrl: string | null;
  /** Account invites (POST /account/invites) and the mail that carries them. */
  readonly invites: InviteSettings;
  /** Accept `http://` OpenID Connect issuers (tests and labs only); SSO's callback is PUBLIC_API_URL's. */
  readonly ssoAllowInsecureIssuers: boolean;
  /** Slow clients are cut off and connections per address capped (control/http/client-limits.ts). */
  readonly clientLimits: ClientLimits;
  readonly logLevel: LogLevel;
  /** Which driver runs the agents' containers. */
  readonly orchestrator: 'podman' | 'nomad';
  /** As loaded: what is left to the host (runtime, ulimits, firewall) is settled where the driver is created (podman/host.ts). */
  readonly podman: LoadedPodmanSettings;
  /** Orchestrator steps (submit, scale, remove) in flight at once; the rest wait in a queue fair between accounts. */
  readonly orchestratorConcurrency: number;
  /** The Nomad driver's settings; read (and checked) only when ORCHESTRATOR=nomad, else null. */
  readonly nomad: NomadSettings | null;
  /** How often the reconciler compares Postgres with what runs. */
  readonly reconcileIntervalMs: number;
  /** How often replica intervals are checked against what runs (the crash loss bound of replica time). */
  readonly usageMeterIntervalMs: number;
  /** How often the edge's request counters move from Redis to Postgres (the Redis loss bound). */
  readonly usageFlushIntervalMs: number;
  /** The podman driver's scaler of agents with deploy.auto_scale (docs/autoscaling.md). */
  readonly autoscale: AutoscaleSettings;
  /** Deployments kept per agent; older ones are pruned when a new one is recorded (docs/deployments.md). */
  readonly deploymentHistoryLimit: number;
  /** How often the canary judge looks at every running canary's figures (docs/deployments.md, "Canary deploys"). */
  readonly canaryJudgeIntervalMs: number;
  /** Days an audit event is kept; the hourly housekeeping pass deletes older ones (docs/audit.md). */
  readonly auditRetentionDays: number;
  /** Delivery of webhook events (docs/webhooks.md). */
  readonly webhooks: WebhookSettings;
  /** Custom domains: their TXT checks and their certificates (docs/domains.md). */
  readonly domains: DomainSettings;
  /** The listener agents' replicas call (issue 37), and the limits of the sessions it keeps. */
  readonly agentServices: AgentServicesSettings;
  /** Traces of invokes replicas send (docs/traces.md): retention, the per-agent cap, model prices. */
  readonly traces: TraceSettings;
}

/** The agent services endpoint (docs/contract.md, "Sessions API v1"). */
export interface AgentServicesSettings {
  readonly host: string;
  /** 0: not served (nothing listens; replicas keep their conversations in memory). */
  readonly port: number;
  /** How long a replica's token is valid; drivers write a fresh one well before it runs out. */
  readonly tokenTtlSeconds: number;
  readonly sessions: SessionLimits;
}

/** Let's Encrypt's production directory (RFC 8555 §7.1.1): the default CA of custom domains' certificates. */
export const LETS_ENCRYPT_DIRECTORY = 'https://acme-v02.api.letsencrypt.org/directory';

export interface DomainSettings {
  /** The ACME (RFC 8555) directory certificates are ordered from. */
  readonly acmeDirectoryUrl: string;
  /** The ACME account's contact, told of expiring certificates by some CAs; none when null. */
  readonly acmeEmail: string | null;
  /** An extra CA (PEM file) trusted for the ACME server's own HTTPS, besides the system's (Pebble's, in tests). */
  readonly acmeCaFile: string | null;
  /** `host:port` of the DNS server TXT records are read from; the system's resolvers when null. */
  readonly dnsResolver: string | null;
  /** How often the domain worker looks for due checks and renewals, besides being woken by the API. */
  readonly checkIntervalMs: number;
}

export interface WebhookSettings {
  /** One attempt's deadline. */
  readonly timeoutMs: number;
  /** Deliver to loopback, private and link-local addresses (a single-host install: `npm run up` sets it). */
  readonly allowPrivateNetworks: boolean;
  /** The first retry waits up to this long, each later one up to twice the one before … */
  readonly retryBaseMs: number;
  /** … but never more than this. */
  readonly retryMaxMs: number;
  /** No attempt is made later than this after the event. */
  readonly retryWindowMs: number;
  /** How long the dispatcher waits at most without a NOTIFY before it looks at the outbox. */
  readonly pollIntervalMs: number;
}

export interface AutoscaleSettings {
  /** How often the scaler looks at every auto-scaled agent. */
  readonly intervalMs: number;
  /** Requests per minute one replica is meant to take. */
  readonly targetRpmPerReplica: number;
  /** Mean CPU percent per replica the scaler aims at. */
  readonly targetCpuPercent: number;
  /** How long after a change of the replica count the scaler leaves the agent alone. */
  readonly cooldownMs: number;
  /**
   * Replicas younger than this are left out of the CPU signal: podman's one-shot stats
   * average CPU over the container's life, so a replica seconds old reports its start-up
   * (near 100 % of a core) as its load.
   */
  readonly cpuWarmupMs: number;
}

export type RegistrationMode = 'open' | 'invite' | 'closed';
export type LogLevel = 'debug' | 'info' | 'warn' | 'error' | 'silent';

export interface AgentUrlSettings {
  readonly scheme: 'http' | 'https';
  readonly domain: string;
  /** Omitted from the URL when null (the scheme's default port). */
  readonly port: number | null;
}


/** Reads and checks every setting, reporting all bad values at once rather than the first. */
export function loadConfig(env: Env): Config {
  const read = new SettingReader(env);

  const config: Config = {
    host: read.string('CONTROL_HOST', '127.0.0.1'),
    port: read.port('CONTROL_PORT', 7070),
    metricsPort: read.port('CONTROL_METRICS_PORT', 7072),
    databaseUrl: read.url('DATABASE_URL', ['postgres:', 'postgresql:']),
    databaseStatementTimeoutMs: read.integer('DATABASE_STATEMENT_TIMEOUT_MS', 30_000, 100, 3_600_000),
    databaseTimeouts: Object.freeze({
      connectMs: read.integer('DATABASE_CONNECT_TIMEOUT_MS', 1_000, 50, 60_000),
      acquireMs: read.integer('DATABASE_ACQUIRE_TIMEOUT_MS', 1_500, 50, 60_000),
      queryMs: read.integer('DATABASE_QUERY_TIMEOUT_MS', 1_500, 50, 3_600_000),
    }),
    redisUrl: read.url('REDIS_URL', ['redis:', 'rediss:']),
    redisCommandTimeoutMs: read.integer('REDIS_COMMAND_TIMEOUT_MS', 1_000, 50, 60_000),
    tokenRateLimitTimeoutMs: read.integer('TOKEN_RATE_LIMIT_TIMEOUT_MS', 250, 10, 60_000),
    redisKeyPrefix: read.string('REDIS_KEY_PREFIX', ''),
    masterKeys: Object.freeze(readMasterKeys(read)),
    registrationMode: read.oneOf('REGISTRATION_MODE', ['open', 'invite', 'closed'] as const, 'open'),
    agentUrl: {
      scheme: read.oneOf('AGENT_URL_SCHEME', ['http', 'https'] as const, 'http'),
      domain: read.matching('AGENT_DOMAIN', 'agents.localhost', DNS_NAME, 'a lower-case DNS name such as agents.example.com'),
      port: read.optionalPort('AGENT_URL_PORT', 7080),
    },
    runtimeImage: read.string('RUNTIME_IMAGE', LOCAL_RUNTIME_IMAGE),
    sessionTtlMinutes: read.integer('SESSION_TTL_MINUTES', 60, 1, 24 * 60),
    tokenRateLimitPerMinute: read.integer('TOKEN_RATE_LIMIT_PER_MINUTE', 600, 1, 1_000_000),
    loginRateLimitPerMinute: read.integer('LOGIN_RATE_LIMIT_PER_MINUTE', 10, 1, 10_000),
    registrationRateLimitPerHour: read.integer('REGISTRATION_RATE_LIMIT_PER_HOUR', 10, 1, 1_000_000),
    ssoStartRateLimitPerMinute: read.integer('SSO_START_RATE_LIMIT_PER_MINUTE', 30, 1, 1_000_000),
    trustProxy: read.boolean('TRUST_PROXY', false),
    publicApiUrl: read.optionalString('PUBLIC_API_URL') === null ? null : read.url('PUBLIC_API_URL', ['https:', 'http:']).replace(/\/+$/, ''),
    invites: Object.freeze({
      ttlHours: read.integer('INVITE_TTL_HOURS', 168, 1, 24 * 365),
      smtpUrl: read.optionalString('SMTP_URL') === null ? null : read.url('SMTP_URL', ['smtp:', 'smtps:']),
      smtpFrom: read.string('SMTP_FROM', 'agent-platform@localhost'),
    }),
    ssoAllowInsecureIssuers: read.boolean('SSO_ALLOW_INSECURE_ISSUERS', false),
    clientLimits: Object.freeze({
      headersTimeoutMs: read.integer('CONTROL_HEADERS_TIMEOUT_MS', 10_000, 100, 600_000),
      // Request bodies here are small JSON; a minute is generous even on a slow link.
      requestTimeoutMs: read.integer('CONTROL_REQUEST_TIMEOUT_MS', 60_000, 100, 3_600_000),
      maxConnectionsPerAddress: read.integer('CONTROL_MAX_CONNECTIONS_PER_ADDRESS', 256, 1, 1_000_000),
    }),
    logLevel: read.oneOf('LOG_LEVEL', ['debug', 'info', 'warn', 'error', 'silent'] as const, 'info'),
    orchestrator: read.oneOf('ORCHESTRATOR', ['podman', 'nomad'] as const, 'podman'),
    podman: Object.freeze(readPodmanSettings(read)),
    orchestratorConcurrency: read.integer('ORCHESTRATOR_CONCURRENCY', 4, 1, 256),
    nomad: env.ORCHESTRATOR === 'nomad' ? Object.freeze(readNomadSettings(read)) : null,
    reconcileIntervalMs: read.integer('RECONCILE_INTERVAL_SECONDS', 30, 1, 3600) * 1000,
    usageMeterIntervalMs: read.integer('USAGE_METER_INTERVAL_MS', 15_000, 100, 3_600_000),
    usageFlushIntervalMs: read.integer('USAGE_FLUSH_INTERVAL_MS', 30_000, 100, 3_600_000),
    autoscale: Object.freeze({
      intervalMs: read.integer('AUTOSCALE_INTERVAL_MS', 15_000, 100, 3_600_000),
      targetRpmPerReplica: read.integer('AUTOSCALE_TARGET_RPM_PER_REPLICA', 60, 1, 1_000_000),
      targetCpuPercent: read.integer('AUTOSCALE_TARGET_CPU_PERCENT', 70, 1, 1000),
      cooldownMs: read.integer('AUTOSCALE_COOLDOWN_MS', 60_000, 0, 86_400_000),
      cpuWarmupMs: read.integer('AUTOSCALE_CPU_WARMUP_MS', 30_000, 0, 3_600_000),
    }),
    deploymentHistoryLimit: read.integer('DEPLOYMENT_HISTORY_LIMIT', 50, 1, 1000),
    // Each pass reads the last minute's figures of every running canary: a judgement within
    // two seconds keeps what a failing canary answers near min_requests.
    canaryJudgeIntervalMs: read.integer('CANARY_JUDGE_INTERVAL_MS', 2_000, 250, 60_000),
    auditRetentionDays: read.integer('AUDIT_RETENTION_DAYS', 400, 1, 36_500),
    webhooks: Object.freeze({
      timeoutMs: read.integer('WEBHOOK_TIMEOUT_MS', 10_000, 100, 60_000),
      allowPrivateNetworks: read.boolean('WEBHOOK_ALLOW_PRIVATE_NETWORKS', false),
      retryBaseMs: read.integer('WEBHOOK_RETRY_BASE_MS', 10_000, 1, 3_600_000),
      retryMaxMs: read.integer('WEBHOOK_RETRY_MAX_MS', 3_600_000, 1, 86_400_000),
      retryWindowMs: read.integer('WEBHOOK_RETRY_WINDOW_SECONDS', 86_400, 1, 7 * 86_400) * 1000,
      pollIntervalMs: read.integer('WEBHOOK_POLL_INTERVAL_MS', 30_000, 10, 3_600_000),
    }),
    domains: Object.freeze({
      acmeDirectoryUrl: read.url('ACME_DIRECTORY_URL', ['https:'], LETS_ENCRYPT_DIRECTORY),
      acmeEmail: read.optionalString('ACME_EMAIL'),
      acmeCaFile: read.optionalString('ACME_CA_FILE'),
      dnsResolver: read.optionalString('DNS_RESOLVER'),
      checkIntervalMs: read.integer('DOMAIN_CHECK_INTERVAL_SECONDS', 30, 1, 3600) * 1000,
    }),
    agentServices: Object.freeze({
      // Every interface, as replicas reach the host through their network's gateway: nothing is served without a valid token.
      host: read.string('AGENT_SERVICES_HOST', '0.0.0.0'),
      port: read.port('AGENT_SERVICES_PORT', 7090),
      tokenTtlSeconds: read.integer('AGENT_SERVICES_TOKEN_TTL_SECONDS', 3600, 60, 86_400),
      sessions: Object.freeze({
        maxBytes: read.integer('SESSION_MAX_BYTES', 1_048_576, 1024, 16 * 1_048_576),
        maxPerAgent: read.integer('SESSIONS_MAX_PER_AGENT', 100_000, 1, 10_000_000),
        // Each invoke of a conversation is a write: 500 a second is an agent far busier than most, and still bounded.
        writesPerSecond: read.integer('SESSION_WRITES_PER_SECOND', 500, 1, 100_000),
        // A read is a statement on Postgres too: an agent's code, which the platform does not trust, cannot flood it.
        readsPerSecond: read.integer('SESSION_READS_PER_SECOND', 2000, 1, 100_000),
      }),
    }),
    traces: Object.freeze(readTraceSettings(read)),
  };

  const imageProblem = config.orchestrator === 'nomad' ? mutableImageProblem(config.runtimeImage) : null;
  if (imageProblem) read.report(`RUNTIME_IMAGE: ${config.runtimeImage} is ${imageProblem}`);
  const prefixProblem = keyPrefixProblem('REDIS_KEY_PREFIX', config.redisKeyPrefix);
  if (prefixProblem) read.report(prefixProblem);
  if (config.metricsPort !== 0 && config.metricsPort === config.port) {
    read.report('CONTROL_METRICS_PORT: must differ from CONTROL_PORT (both listen on CONTROL_HOST)');
  }
  if (config.agentServices.port !== 0 && [config.port, config.metricsPort].includes(config.agentServices.port)) {
    read.report('AGENT_SERVICES_PORT: must differ from CONTROL_PORT and CONTROL_METRICS_PORT (one process listens on all three)');
  }
  // Node refuses a headersTimeout longer than requestTimeout.
  if (config.clientLimits.headersTimeoutMs > config.clientLimits.requestTimeoutMs) {
    read.report('CONTROL_HEADERS_TIMEOUT_MS: must not exceed CONTROL_REQUEST_TIMEOUT_MS (the headers are part of the request)');
  }
  // A connection opened for a waiting request must be able to open within the request's wait.
  if (config.databaseTimeouts.connectMs > config.databaseTimeouts.acquireMs) {
    read.report('DATABASE_CONNECT_TIMEOUT_MS: must not exceed DATABASE_ACQUIRE_TIMEOUT_MS (a request waiting for a connection waits for a new one to open too)');
  }
  if (config.tokenRateLimitTimeoutMs > config.redisCommandTimeoutMs) {
    read.report('TOKEN_RATE_LIMIT_TIMEOUT_MS: must not exceed REDIS_COMMAND_TIMEOUT_MS (the count is one Redis command)');
  }
  if (config.domains.acmeEmail !== null && !/^[^@\s]+@[^@\s]+$/.test(config.domains.acmeEmail)) {
    read.report(`ACME_EMAIL: an email address, got "${config.domains.acmeEmail}"`);
  }
  if (config.domains.dnsResolver !== null && !/^[^\s:]+:\d{1,5}$|^\[[0-9a-fA-F:]+\]:\d{1,5}$/.test(config.domains.dnsResolver)) {
    read.report(`DNS_RESOLVER: host:port of a DNS server (such as 127.0.0.1:53), got "${config.domains.dnsResolver}"`);
  }
  if (config.publicApiUrl !== null && URL.canParse(config.publicApiUrl)) {
    const url = new URL(config.publicApiUrl);
    if (url.search || url.hash || url.username || url.password) read.report('PUBLIC_API_URL: a URL without credentials, query or fragment (clients append /v1/… to it)');
    if (/\/v1$/.test(url.pathname)) read.report('PUBLIC_API_URL: the URL without /v1, such as https://api.example.com (the document adds /v1)');
  }
  // An invite's link is a console page: a mail needs it absolute.
  if (config.invites.smtpUrl !== null && config.publicApiUrl === null) {
    read.report('SMTP_URL: needs PUBLIC_API_URL too (the mailed invite link points at the console there)');
  }
  if (config.webhooks.retryBaseMs > config.webhooks.retryMaxMs) {
    read.report('WEBHOOK_RETRY_BASE_MS: must not exceed WEBHOOK_RETRY_MAX_MS (the first wait is one of the waits)');
  }
  read.throwIfProblems();
  return Object.freeze(config);
}

export interface InviteSettings {
  /** How long an invite's link may be accepted. */
  readonly ttlHours: number;
  /** smtp(s)://user:password@host:port; null: invites are not mailed, the inviter passes the link on. */
  readonly smtpUrl: string | null;
  readonly smtpFrom: string;
}

const DNS_NAME = /^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$/;

/**
 * DATABASE_URL for operator commands, falling back to the Postgres that `npm run up`
 * runs under .data/ (its password file and port), so `npm run admin` needs no setup.
 */
export function loadDatabaseUrl(env: Env): string {
  if (env.DATABASE_URL) return env.DATABASE_URL;
  const dataDir = env.PLATFORM_DATA_DIR ?? '.data';
  try {
    const password = readFileSync(`${dataDir}/postgres.password`, 'utf8').trim();
    return `postgres://platform:${encodeURIComponent(password)}@127.0.0.1:${env.UP_POSTGRES_PORT ?? 7432}/platform`;
  } catch {
    throw new ConfigError(['DATABASE_URL: required (or run `npm run up` first, which keeps its database under .data/)']);
  }
}

/**
 * The master keys for `npm run admin -- keys …`: the control API's own settings (MASTER_KEYS
 * and the rest), or, on the database `npm run up` runs, the key file it keeps in .data/.
 */
export function loadAdminMasterKeys(env: Env): Buffer[] {
  const given = ['MASTER_KEYS', 'MASTER_KEYS_FILE', 'MASTER_KEY', 'MASTER_KEY_FILE'].some((name) => env[name]);
  const upKeyFile = `${env.PLATFORM_DATA_DIR ?? '.data'}/master.key`;
  return readSettings(given || env.DATABASE_URL ? env : { MASTER_KEYS_FILE: upKeyFile }, readMasterKeys);
}

/**
 * Redis for operator commands, so that a plan change reaches the edge at once: REDIS_URL,
 * or the Redis that `npm run up` runs when the database is its too, with the control
 * API's REDIS_KEY_PREFIX so the command writes the projection the edge reads.
 */
export function loadAdminRedis(env: Env): { url: string; keyPrefix: string } | undefined {
  const keyPrefix = env.REDIS_KEY_PREFIX ?? '';
  const problem = keyPrefixProblem('REDIS_KEY_PREFIX', keyPrefix);
  if (problem) throw new ConfigError([problem]);
  if (env.REDIS_URL) return { url: env.REDIS_URL, keyPrefix };
  return env.DATABASE_URL ? undefined : { url: `redis://127.0.0.1:${env.UP_REDIS_PORT ?? 7379}`, keyPrefix };
}
