import { readFileSync } from 'node:fs';
import { basename, resolve } from 'node:path';
import { readAgentFile, type ToolDeclaration } from './agent-file.js';
import { ConfigError } from './config-error.js';
import { isProvider, KEY_VARIABLE, keyProblem, providerForModel, PROVIDERS, type Provider } from './providers.js';
import { loadSettings, type RuntimeSettings } from './settings.js';

export const DEFAULT_MODEL = 'gpt-4o';
export const DEFAULT_SYSTEM_PROMPT =
  'You are a helpful assistant. Answer accurately and concisely, and say so when you do not know.';
const DEFAULT_AGENT_ID = 'agt_local';
const DEFAULT_AGENT_NAME = 'assistant';

const BASE_URL_VARIABLE: Readonly<Record<Provider, string>> = {
  openai: 'OPENAI_BASE_URL',
  anthropic: 'ANTHROPIC_BASE_URL',
  google: 'GOOGLE_GEMINI_BASE_URL',
};

/** The agent as resolved from platform env > agent.yaml > defaults. */
export interface AgentConfig {
  id: string;
  name: string;
  systemPrompt: string;
  model: string;
  /** Undefined when neither LLM_PROVIDER nor the model name tells it. */
  provider: Provider | undefined;
  temperature: number | undefined;
  apiKey: string | undefined;
  /** Provider endpoint override; undefined means the provider's public API. */
  baseUrl: string | undefined;
  templateDir: string;
  templateName: string;
  tools: readonly ToolDeclaration[];
  /** Why the agent cannot answer (health 503), or undefined when it is ready. */
  notConfiguredReason: string | undefined;
}

export interface RuntimeConfig {
  agent: AgentConfig;
  settings: RuntimeSettings;
}

type Environment = Readonly<Record<string, string | undefined>>;

/**
 * Reads the whole configuration once, at start. A bad agent.yaml or setting, or
 * an agent services token file that cannot be read, throws ConfigError; a missing or mismatched model key does not, because the
 * contract reports it on /health instead.
 */
export function loadConfig(env: Environment, options: { defaultTemplateDir: string }): RuntimeConfig {
  const settings = loadSettings(env);
  if (settings.agentServices !== undefined) checkTokenFile(settings.agentServices.tokenFile);
  const templateDir = resolve(nonEmpty(env['PLATFORM_TEMPLATE_DIR']) ?? options.defaultTemplateDir);
  const file = readAgentFile(templateDir);

  const modelFromEnv = nonEmpty(env['LLM_MODEL']);
  const model = modelFromEnv ?? file.llm.model ?? DEFAULT_MODEL;
  const providerSetting = resolveProviderSetting(env, modelFromEnv, file.llm.provider, model);
  const provider = providerSetting.provider;
  const apiKey = provider && nonEmpty(env[KEY_VARIABLE[provider]]);

  return deepFreeze({
    settings,
    agent: {
      id: nonEmpty(env['AGENT_ID']) ?? DEFAULT_AGENT_ID,
      name: nonEmpty(env['AGENT_NAME']) ?? file.name ?? DEFAULT_AGENT_NAME,
      // docs/contract.md: the platform passes SYSTEM_PROMPT empty when none was configured, so empty means "not set".
      systemPrompt: nonEmpty(env['SYSTEM_PROMPT']) ?? file.systemPrompt ?? DEFAULT_SYSTEM_PROMPT,
      model,
      provider,
      temperature: file.llm.temperature,
      apiKey,
      baseUrl: provider && readBaseUrl(env, BASE_URL_VARIABLE[provider]),
      templateDir,
      templateName: basename(templateDir),
      tools: file.tools,
      notConfiguredReason: providerSetting.problem ?? (provider && keyProblem(provider, apiKey)),
    },
  });
}

/**
 * LLM_PROVIDER wins when set. agent.yaml's llm.provider describes agent.yaml's
 * own model, so it applies only when LLM_MODEL does not replace that model;
 * otherwise the provider follows the model name, as the platform derives it.
 */
function resolveProviderSetting(
  env: Environment,
  modelFromEnv: string | undefined,
  providerFromFile: Provider | undefined,
  model: string,
): { provider: Provider | undefined; problem?: string } {
  const fromEnv = nonEmpty(env['LLM_PROVIDER']);
  if (fromEnv !== undefined) {
    if (isProvider(fromEnv)) return { provider: fromEnv };
    return { provider: undefined, problem: `LLM_PROVIDER "${fromEnv}" is not one of ${PROVIDERS.join(', ')}` };
  }
  const provider = (modelFromEnv === undefined ? providerFromFile : undefined) ?? providerForModel(model);
  if (provider !== undefined) return { provider };
  return {
    provider: undefined,
    problem: `the provider of model "${model}" cannot be told from its name: set LLM_PROVIDER to one of ${PROVIDERS.join(', ')}`,
  };
}

/**
 * A runtime told to keep conversations in agent services but unable to authenticate
 * would fail every invoke; better not to start, naming the file, than to look ready.
 */
function checkTokenFile(path: string): void {
  let token: string;
  try {
    token = readFileSync(path, 'utf8').trim();
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'unreadable';
    throw new ConfigError(`AGENT_SERVICES_TOKEN_FILE="${path}" cannot be read (${code}): it holds the runtime's token for agent services`);
  }
  if (token === '') throw new ConfigError(`AGENT_SERVICES_TOKEN_FILE="${path}" is empty: it must hold the runtime's token for agent services`);
}

/**
 * A URL's text as a message may repeat it: everything up to its last @ but the scheme, left
 * out. Credentials as like as not, and in a URL that does not parse they may hold any character.
 */
function withoutUserInfo(raw: string): string {
  return raw.replace(/^([a-z][a-z0-9+.-]*:\/\/)?.*@/is, (_, scheme: string | undefined) => `${scheme ?? ''}…@`);
}

function readBaseUrl(env: Environment, variable: string): string | undefined {
  const raw = nonEmpty(env[variable]);
  if (raw === undefined) return undefined;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError(`${variable}="${withoutUserInfo(raw)}" is not a URL: it must be the provider API's base, e.g. https://host/v1`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new ConfigError(`${variable}="${withoutUserInfo(raw)}" must be an http or https URL`);
  }
  // fetch refuses a URL with credentials, so every invoke would fail; the message leaves them out.
  if (url.username !== '' || url.password !== '') {
    throw new ConfigError(`${variable} must not carry credentials (user:password@${url.host}): the provider's key goes in its key variable`);
  }
  return raw.replace(/\/+$/, '');
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === '' ? undefined : value;
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}
