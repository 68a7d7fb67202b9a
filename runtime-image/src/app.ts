import { randomUUID } from 'node:crypto';
import type { Server, ServerResponse } from 'node:http';
import type { ModelMessage, ToolSet } from 'ai';
import { createAgentRunner, type AgentRunner } from './agent-runner.js';
import type { Clock } from './clock.js';
import type { AgentConfig, RuntimeConfig } from './config.js';
import { createInvokeRoute } from './http/invoke-route.js';
import { sendJson } from './http/respond.js';
import { createHttpServer } from './http/server.js';
import { KeyedLock } from './keyed-lock.js';
import { createInvokeService } from './invoke-service.js';
import { createLanguageModel, type Fetch } from './language-model.js';
import type { Logger } from './logger.js';
import { classifyProviderFailure } from './provider-failure.js';
import { SessionStore } from './session-store.js';

export const CONTRACT_VERSION = 'v1';

export interface RuntimeDeps {
  /** The agent's tools, already imported (see loadTools). */
  tools: ToolSet;
  clock: Clock;
  logger: Logger;
  fetch: Fetch;
  newSessionId?: () => string;
}

export interface Runtime {
  server: Server;
  sessions: SessionStore<ModelMessage>;
}

/** The composition root: builds every collaborator once from the configuration and wires the routes. */
export function createRuntime(config: RuntimeConfig, deps: RuntimeDeps): Runtime {
  const { agent, settings } = config;
  const sessions = new SessionStore<ModelMessage>(
    {
      idleTtlMs: settings.sessionTtlMs,
      maxSessions: settings.maxSessions,
      maxTurnsPerSession: settings.maxTurnsPerSession,
      historyBudgetChars: settings.sessionHistoryBudgetChars,
    },
    deps.clock,
  );
  const invokeService = createInvokeService({
    runner: createRunnerIfConfigured(config, deps),
    notConfiguredReason: agent.notConfiguredReason,
    sessions,
    sessionLock: new KeyedLock(),
    newSessionId: deps.newSessionId ?? randomUUID,
    classifyFailure: (error) => agent.provider && classifyProviderFailure(error, agent.provider, settings.providerTimeoutMs),
  });

  const server = createHttpServer(
    {
      '/health': { GET: (_request, response) => sendHealth(response, agent) },
      '/invoke': { POST: createInvokeRoute(invokeService, agent.id) },
      '/': { GET: (_request, response) => sendJson(response, 200, describeAgent(agent, Object.keys(deps.tools))) },
    },
    deps,
  );
  return { server, sessions };
}

/** The same, for callers that only need the HTTP server. */
export function createServer(config: RuntimeConfig, deps: RuntimeDeps): Server {
  return createRuntime(config, deps).server;
}

function createRunnerIfConfigured(config: RuntimeConfig, deps: RuntimeDeps): AgentRunner | undefined {
  const { agent, settings } = config;
  if (agent.notConfiguredReason !== undefined || agent.provider === undefined || agent.apiKey === undefined) return undefined;
  const model = createLanguageModel(
    { provider: agent.provider, model: agent.model, apiKey: agent.apiKey, baseUrl: agent.baseUrl },
    { fetch: deps.fetch, timeoutMs: settings.providerTimeoutMs },
  );
  return createAgentRunner({
    model,
    systemPrompt: agent.systemPrompt,
    temperature: agent.temperature,
    tools: deps.tools,
    maxToolSteps: settings.maxToolSteps,
    maxRetries: settings.providerMaxRetries,
  });
}

function sendHealth(response: ServerResponse, agent: AgentConfig): void {
  if (agent.notConfiguredReason !== undefined) {
    sendJson(response, 503, { status: 'unconfigured', error: agent.notConfiguredReason });
    return;
  }
  sendJson(response, 200, { status: 'ok', contract: CONTRACT_VERSION, agent_id: agent.id });
}

function describeAgent(agent: AgentConfig, toolNames: string[]) {
  return {
    agent_id: agent.id,
    name: agent.name,
    provider: agent.provider ?? null,
    model: agent.model,
    template: agent.templateName,
    tools: toolNames,
    contract: CONTRACT_VERSION,
  };
}
