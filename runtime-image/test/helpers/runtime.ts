import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { createRuntime, type Runtime } from '../../src/app.js';
import { systemClock, type Clock } from '../../src/clock.js';
import { loadConfig, type RuntimeConfig } from '../../src/config.js';
import { LogContext } from '../../src/log-context.js';
import { providerFetchFor } from '../../src/http-fetch.js';
import { createJsonLogger } from '../../src/logger.js';
import { loadTools } from '../../src/tools.js';
import type { FakeProvider, FakeProviderName } from './fake-provider.js';

export const TEMPLATES_DIR = fileURLToPath(new URL('../../templates', import.meta.url));
export const DEFAULT_TEMPLATE_DIR = `${TEMPLATES_DIR}/default`;
export const EXAMPLE_TEMPLATE_DIR = `${TEMPLATES_DIR}/example`;

export const TEST_KEYS: Record<FakeProviderName, string> = {
  openai: 'sk-test-openai-0123456789',
  anthropic: 'sk-ant-test-0123456789',
  google: 'AIzaTest0123456789',
};

export const TEST_MODELS: Record<FakeProviderName, string> = {
  openai: 'gpt-4o',
  anthropic: 'claude-sonnet-4-5',
  google: 'gemini-2.5-flash',
};

const KEY_VARIABLES: Record<FakeProviderName, string> = {
  openai: 'OPENAI_API_KEY',
  anthropic: 'ANTHROPIC_API_KEY',
  google: 'GOOGLE_API_KEY',
};

const BASE_URL_VARIABLES: Record<FakeProviderName, string> = {
  openai: 'OPENAI_BASE_URL',
  anthropic: 'ANTHROPIC_BASE_URL',
  google: 'GOOGLE_GEMINI_BASE_URL',
};

/** The environment the platform would give an agent of `provider`, pointed at the fake provider. */
export function platformEnv(fake: FakeProvider, provider: FakeProviderName, extra: Record<string, string> = {}): Record<string, string> {
  return {
    AGENT_ID: 'agt_test123',
    AGENT_NAME: 'test agent',
    SYSTEM_PROMPT: '',
    LLM_MODEL: TEST_MODELS[provider],
    LLM_PROVIDER: provider,
    [KEY_VARIABLES[provider]]: TEST_KEYS[provider],
    [BASE_URL_VARIABLES[provider]]: fake.baseUrl(provider),
    // Retries wait seconds between attempts; tests that want them turn them on.
    RUNTIME_PROVIDER_MAX_RETRIES: '0',
    ...extra,
  };
}

export interface TestRuntime {
  url: string;
  config: RuntimeConfig;
  sessions: Runtime['sessions'];
  tracing: Runtime['tracing'];
  /** Every log line the runtime wrote, parsed. */
  logs: Array<Record<string, unknown>>;
  logText(): string;
  close(): Promise<void>;
}

/** Starts the runtime in this process on a free port, configured exactly as main.ts would from `env`. */
export async function startRuntime(env: Record<string, string>, options: { clock?: Clock } = {}): Promise<TestRuntime> {
  const config = loadConfig(env, { defaultTemplateDir: DEFAULT_TEMPLATE_DIR });
  const tools = await loadTools(config.agent.templateDir, config.agent.tools);
  const lines: string[] = [];
  const logContext = new LogContext();
  const logger = createJsonLogger((line) => lines.push(line), 'debug', Date, logContext);
  // The provider's fetch main.ts gives the runtime.
  const providerFetch = providerFetchFor(process.env, process.execArgv);
  const { server, sessions, tracing } = createRuntime(config, { tools, clock: options.clock ?? systemClock, logger, logContext, fetch: providerFetch.fetch });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    config,
    sessions,
    tracing,
    get logs() {
      return lines.map((line) => JSON.parse(line) as Record<string, unknown>);
    },
    logText: () => lines.join(''),
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await tracing.shutdown(0);
      providerFetch.close();
    },
  };
}

export interface JsonResponse {
  status: number;
  headers: Headers;
  // Response bodies are checked field by field.
  body: any;
}

export async function postInvoke(url: string, body: unknown, headers: Record<string, string> = {}): Promise<JsonResponse> {
  const response = await fetch(`${url}/invoke`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: response.status, headers: response.headers, body: await response.json() };
}

export async function getJson(url: string, init: RequestInit = {}): Promise<JsonResponse> {
  const response = await fetch(url, init);
  const text = await response.text();
  return { status: response.status, headers: response.headers, body: text ? JSON.parse(text) : undefined };
}

/** A clock the test moves by hand. */
export class ManualClock implements Clock {
  constructor(private current = 1_700_000_000_000) {}
  now(): number {
    return this.current;
  }
  advance(ms: number): void {
    this.current += ms;
  }
}

/** Resolves once `condition` holds, checking after each turn of the event loop; gives up after 5 s. */
export async function waitFor(condition: () => boolean, what = 'condition'): Promise<void> {
  const giveUpAt = Date.now() + 5000;
  while (!condition()) {
    if (Date.now() > giveUpAt) throw new Error(`gave up waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}
