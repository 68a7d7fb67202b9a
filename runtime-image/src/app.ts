import { randomUUID } from 'node:crypto';
import type { Server, ServerResponse } from 'node:http';
import type { ModelMessage, ToolSet } from 'ai';
import { createAgentRunner, type AgentRunner } from './agent-runner.js';
import { AgentServicesTransport } from './agent-services-transport.js';
import { BatchedCalls } from './batched-calls.js';
import { BearerTokenFile } from './bearer-token-file.js';
import type { Clock } from './clock.js';
import type { AgentConfig, RuntimeConfig } from './config.js';
import { createInvokeRoute } from './http/invoke-route.js';
import { sendJson } from './http/respond.js';
import { createHttpServer } from './http/server.js';
import { KeyedLock } from './keyed-lock.js';
import { createInvokeService } from './invoke-service.js';
import { createLanguageModel, type Fetch } from './language-model.js';
import type { LogContext } from './log-context.js';
import type { Logger } from './logger.js';
import { MemorySessionStore } from './memory-session-store.js';
import { classifyProviderFailure } from './provider-failure.js';
import { DEFAULT_WRITE_ATTEMPTS, RemoteSessionStore } from './remote-session-store.js';
import { SessionsApiClient } from './sessions-api-client.js';
import type { SessionStore } from './session-store.js';
import { createTracing, type Tracing } from './tracing/tracing.js';

export const CONTRACT_VERSION = 'v1';

export interface RuntimeDeps {
  /** The agent's tools, already imported (see loadTools). */
  tools: ToolSet;
  clock: Clock;
  logger: Logger;
  /** What `logger` adds to each line; the invoke route fills it in (an invoke's trace id). */
  logContext: LogContext;
  fetch: Fetch;
  newSessionId?: () => string;
}

export interface Runtime {
  server: Server;
  sessions: SessionStore<ModelMessage>;
  /** Invoke traces and their export; shut down after the server, so the last invokes' spans go out. */
  tracing: Tracing;
}

/** The composition root: builds every collaborator once from the configuration and wires the routes. */
export function createRuntime(config: RuntimeConfig, deps: RuntimeDeps): Runtime {
  const { agent, settings } = config;
  // One reader of the token file for everything sent to agent services.
  const token = settings.agentServices && new BearerTokenFile(settings.agentServices.tokenFile);
  const sessions = createSessionStore(config, deps, token);
  const tracing = createTracing(agent, settings, { token, fetch: deps.fetch, logger: deps.logger, clock: deps.clock });
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
      '/invoke': { POST: createInvokeRoute(invokeService, agent.id, tracing.tracer, deps.logContext) },
      '/': { GET: (_request, response) => sendJson(response, 200, describeAgent(agent, Object.keys(deps.tools), tracing)) },
    },
    deps,
  );
  return { server, sessions, tracing };
}

/** The same, for callers that only need the HTTP server. */
export function createServer(config: RuntimeConfig, deps: RuntimeDeps): Server {
  return createRuntime(config, deps).server;
}

/** Agent services when the platform gives them, this replica's memory otherwise: chosen once, here. */
function createSessionStore(config: RuntimeConfig, deps: RuntimeDeps, token: BearerTokenFile | undefined): SessionStore<ModelMessage> {
  const { settings } = config;
  const services = settings.agentServices;
  if (services === undefined || token === undefined) {
    // Once, at start: with a second replica, or after a restart, callers' conversations are forgotten.
    deps.logger.warn("conversations are kept in this replica's memory only: AGENT_SERVICES_URL is not set", {
      max_sessions: settings.maxSessions,
    });
    return new MemorySessionStore<ModelMessage>(
      {
        idleTtlMs: settings.sessionTtlMs,
        maxSessions: settings.maxSessions,
        maxTurnsPerSession: settings.maxTurnsPerSession,
        historyBudgetChars: settings.sessionHistoryBudgetChars,
      },
      deps.clock,
    );
  }
  const transport = new AgentServicesTransport({ baseUrl: services.url, token });
  return new RemoteSessionStore<ModelMessage>(
    // Conversations served at once share requests: their reads and appends go in batches.
    new SessionsApiClient(new BatchedCalls(transport)),
    {
      maxBytes: settings.sessionMaxBytes,
      maxTurns: settings.maxTurnsPerSession,
      writeAttempts: DEFAULT_WRITE_ATTEMPTS,
      startsTurn: (message) => message.role === 'user',
    },
    deps.logger,
  );
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

/** Beyond v1, `traces`: whether invokes are traced, and how many spans were sent and dropped since start. */
function describeAgent(agent: AgentConfig, toolNames: string[], tracing: Tracing) {
  const stats = tracing.stats();
  return {
    agent_id: agent.id,
    name: agent.name,
    provider: agent.provider ?? null,
    model: agent.model,
    template: agent.templateName,
    tools: toolNames,
    contract: CONTRACT_VERSION,
    traces: stats === undefined ? { enabled: false } : { enabled: true, spans_exported: stats.exported, spans_dropped: stats.dropped },
  };
}
