import { ConfigError } from './config-error.js';
import { LOG_LEVELS, type LogLevel } from './logger.js';

/** How the runtime itself behaves: port, bounds, deadlines. Read from the environment, each with a default. */
export interface RuntimeSettings {
  port: number;
  sessionTtlMs: number;
  maxSessions: number;
  maxTurnsPerSession: number;
  /** Characters of history kept across all sessions; the memory bound of the in-memory session store. */
  sessionHistoryBudgetChars: number;
  /** Bytes of one session's messages (as JSON) kept through agent services; the oldest turns go first. */
  sessionMaxBytes: number;
  /** Where sessions are kept; undefined keeps them in this replica's memory. */
  agentServices: AgentServicesSettings | undefined;
  maxToolSteps: number;
  providerTimeoutMs: number;
  providerMaxRetries: number;
  logLevel: LogLevel;
  shutdownGraceMs: number;
  traces: TraceSettings;
}

export interface TraceSettings {
  /** RUNTIME_TRACES: whether invokes are traced at all; traces go to agent services, so only with AGENT_SERVICES_URL. */
  enabled: boolean;
  /** TRACE_CONTENT: whether spans carry message and tool text. */
  recordContent: boolean;
  maxQueuedSpans: number;
  exportTimeoutMs: number;
}

export interface AgentServicesSettings {
  /** Base URL, without a trailing slash. */
  url: string;
  /** The file holding the bearer token, rewritten by the platform before the token expires. */
  tokenFile: string;
}

type Environment = Readonly<Record<string, string | undefined>>;

interface IntegerSetting {
  variable: string;
  fallback: number;
  min: number;
  max: number;
  why: string;
}

/** The runtime's own integer settings; their `why` is their description in docs/configuration.md. */
export const INTEGER_SETTINGS = {
  port: { variable: 'PORT', fallback: 8080, min: 0, max: 65535, why: 'the TCP port to listen on' },
  sessionTtlSeconds: { variable: 'RUNTIME_SESSION_TTL_SECONDS', fallback: 3600, min: 1, max: 7 * 24 * 3600, why: "idle seconds before a conversation kept in memory is forgotten (without AGENT_SERVICES_URL; agent services keep one for the deploy's session_ttl_seconds)" },
  maxSessions: { variable: 'RUNTIME_MAX_SESSIONS', fallback: 10_000, min: 1, max: 10_000_000, why: 'conversations kept in memory before the least recently used is dropped (without AGENT_SERVICES_URL)' },
  maxTurnsPerSession: { variable: 'RUNTIME_MAX_TURNS_PER_SESSION', fallback: 50, min: 1, max: 10_000, why: 'exchanges kept per conversation before the oldest is trimmed' },
  sessionHistoryBudgetChars: { variable: 'RUNTIME_SESSION_HISTORY_BUDGET_CHARS', fallback: 50_000_000, min: 100_000, max: 2_000_000_000, why: 'characters of history kept in memory across all conversations (without AGENT_SERVICES_URL)' },
  sessionMaxBytes: { variable: 'SESSION_MAX_BYTES', fallback: 1_048_576, min: 1024, max: 16_777_216, why: "bytes of one conversation's messages (as JSON) kept through agent services, its oldest turns dropped first to stay within; the same as agent services' own limit (both default to 1 MiB), so the runtime trims before they refuse" },
  maxToolSteps: { variable: 'RUNTIME_MAX_TOOL_STEPS', fallback: 8, min: 1, max: 100, why: 'model calls per invoke, tool rounds included' },
  providerTimeoutMs: { variable: 'RUNTIME_PROVIDER_TIMEOUT_MS', fallback: 60_000, min: 100, max: 600_000, why: 'deadline of one request to the model provider' },
  providerMaxRetries: { variable: 'RUNTIME_PROVIDER_MAX_RETRIES', fallback: 2, min: 0, max: 10, why: 'retries of a provider request answered 408, 409, 429 or 5xx' },
  shutdownGraceMs: { variable: 'RUNTIME_SHUTDOWN_GRACE_MS', fallback: 10_000, min: 0, max: 120_000, why: 'time given to in-flight requests after SIGTERM' },
  traceBufferSpans: { variable: 'RUNTIME_TRACE_BUFFER_SPANS', fallback: 2048, min: 1, max: 1_000_000, why: 'finished trace spans held while waiting for export to agent services; past it new spans are dropped and counted' },
  traceExportTimeoutMs: { variable: 'RUNTIME_TRACE_EXPORT_TIMEOUT_MS', fallback: 2000, min: 50, max: 60_000, why: "deadline of one request sending trace spans to agent services; a batch that misses it is dropped and counted" },
} satisfies Record<string, IntegerSetting>;

export function loadSettings(env: Environment): RuntimeSettings {
  const integer = (name: keyof typeof INTEGER_SETTINGS) => readInteger(env, INTEGER_SETTINGS[name]);
  return {
    port: integer('port'),
    sessionTtlMs: integer('sessionTtlSeconds') * 1000,
    maxSessions: integer('maxSessions'),
    maxTurnsPerSession: integer('maxTurnsPerSession'),
    sessionHistoryBudgetChars: integer('sessionHistoryBudgetChars'),
    sessionMaxBytes: integer('sessionMaxBytes'),
    agentServices: readAgentServices(env),
    maxToolSteps: integer('maxToolSteps'),
    providerTimeoutMs: integer('providerTimeoutMs'),
    providerMaxRetries: integer('providerMaxRetries'),
    logLevel: readLogLevel(env),
    shutdownGraceMs: integer('shutdownGraceMs'),
    traces: {
      enabled: readSwitch(env, 'RUNTIME_TRACES', { on: true, off: false }, true),
      recordContent: readSwitch(env, 'TRACE_CONTENT', { true: true, false: false }, false),
      maxQueuedSpans: integer('traceBufferSpans'),
      exportTimeoutMs: integer('traceExportTimeoutMs'),
    },
  };
}

function readSwitch(env: Environment, variable: string, values: Readonly<Record<string, boolean>>, fallback: boolean): boolean {
  const raw = env[variable];
  if (raw === undefined || raw.trim() === '') return fallback;
  const value = values[raw.trim().toLowerCase()];
  if (value === undefined) throw new ConfigError(`${variable}="${raw}" is invalid: it must be ${Object.keys(values).join(' or ')}`);
  return value;
}

function readInteger(env: Environment, setting: IntegerSetting): number {
  const raw = env[setting.variable];
  if (raw === undefined || raw.trim() === '') return setting.fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < setting.min || value > setting.max) {
    throw new ConfigError(
      `${setting.variable}="${raw}" is invalid: it sets ${setting.why} and must be a whole number from ${setting.min} to ${setting.max}`,
    );
  }
  return value;
}

/** Both variables are always read, so the configuration reference finds them whatever the environment. */
function readAgentServices(env: Environment): AgentServicesSettings | undefined {
  const rawUrl = env['AGENT_SERVICES_URL']?.trim() || undefined;
  const tokenFile = env['AGENT_SERVICES_TOKEN_FILE']?.trim() || undefined;
  if (rawUrl === undefined) return undefined;
  let url: URL | undefined;
  try {
    url = new URL(rawUrl);
  } catch {
    url = undefined;
  }
  if (url === undefined || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
    throw new ConfigError(`AGENT_SERVICES_URL="${rawUrl}" must be an http or https URL: where the platform's agent services keep conversations`);
  }
  if (tokenFile === undefined) {
    throw new ConfigError('AGENT_SERVICES_TOKEN_FILE is not set: with AGENT_SERVICES_URL the runtime needs the file holding its token for agent services');
  }
  return { url: rawUrl.replace(/\/+$/, ''), tokenFile };
}

function readLogLevel(env: Environment): LogLevel {
  const raw = env['RUNTIME_LOG_LEVEL'];
  if (raw === undefined || raw.trim() === '') return 'info';
  if (!(LOG_LEVELS as readonly string[]).includes(raw)) {
    throw new ConfigError(`RUNTIME_LOG_LEVEL="${raw}" is invalid: it must be one of ${LOG_LEVELS.join(', ')}`);
  }
  return raw as LogLevel;
}

/**
 * What the runtime's other variables mean, for docs/configuration.md (the platform's
 * scripts/lib/configuration-reference.ts, which finds the names by running loadConfig and
 * refuses one read there and missing here). The platform sets most of them from the agent's
 * deploy object (docs/contract.md, "What the platform gives a container"); `default` says
 * what applies when one is unset.
 */
export const RUNTIME_SETTING_DOCS: Readonly<Record<string, { text: string; default: string }>> = {
  AGENT_SERVICES_URL: {
    text: "Base URL (http or https) of the platform's agent services: conversations are kept there, so every replica continues them and they outlive restarts. An invoke whose conversation cannot be read or kept fails with 503 SESSIONS_UNAVAILABLE.",
    default: "none: conversations stay in this replica's memory, with a warning at start",
  },
  AGENT_SERVICES_TOKEN_FILE: {
    text: 'File holding the bearer token for agent services, read again within a second of the platform rewriting it, and at once when agent services refuse the token held. Required with AGENT_SERVICES_URL; the runtime does not start when it cannot be read.',
    default: 'none',
  },
  RUNTIME_TRACES: {
    text: 'on or off: with AGENT_SERVICES_URL, each invoke is traced (a root span, a span per model call and per tool call, OpenTelemetry GenAI attributes) and the spans are sent to agent services as OTLP/HTTP JSON (`/v1/traces`); without AGENT_SERVICES_URL nothing is traced.',
    default: '`on`',
  },
  TRACE_CONTENT: {
    text: "true or false: whether trace spans carry the messages sent to and received from the model and tools' arguments and results (set from the deploy's `trace_content`). Keys and tokens are never recorded.",
    default: '`false`',
  },
  RUNTIME_LOG_LEVEL: { text: `Least severe log line written: ${LOG_LEVELS.join(', ')}.`, default: '`info`' },
  AGENT_ID: { text: "The agent's id, in logs and answers.", default: '`agt_local`' },
  AGENT_NAME: { text: "The agent's name.", default: "agent.yaml's name, else assistant" },
  SYSTEM_PROMPT: { text: 'The system prompt; empty counts as unset.', default: "agent.yaml's, else a short built-in one" },
  LLM_MODEL: { text: 'The model.', default: "agent.yaml's llm.model, else gpt-4o" },
  LLM_PROVIDER: { text: 'openai, anthropic or google.', default: "agent.yaml's llm.provider, else told by the model name" },
  PLATFORM_TEMPLATE_DIR: { text: 'The agent template folder (agent.yaml and its tools).', default: "the image's templates/default" },
  OPENAI_API_KEY: { text: 'Model key when the provider is openai.', default: 'none: /health answers 503' },
  ANTHROPIC_API_KEY: { text: 'Model key when the provider is anthropic.', default: 'none: /health answers 503' },
  GOOGLE_API_KEY: { text: 'Model key when the provider is google.', default: 'none: /health answers 503' },
  OPENAI_BASE_URL: { text: "Base URL of an OpenAI-compatible API (http or https, no user:password@), instead of OpenAI's.", default: "the provider's public API" },
  ANTHROPIC_BASE_URL: { text: "Base URL of the Anthropic API (http or https, no user:password@), instead of Anthropic's.", default: "the provider's public API" },
  GOOGLE_GEMINI_BASE_URL: { text: "Base URL of the Gemini API (http or https, no user:password@), instead of Google's.", default: "the provider's public API" },
};
