import './supported-node.js';
import type { Server } from 'node:http';
import { fileURLToPath } from 'node:url';
import type { ToolSet } from 'ai';
import { createRuntime } from './app.js';
import { systemClock } from './clock.js';
import { loadConfig, type RuntimeConfig } from './config.js';
import { ConfigError } from './config-error.js';
import { LogContext } from './log-context.js';
import { providerFetchFor } from './http-fetch.js';
import { createJsonLogger, type Logger } from './logger.js';
import { closeGracefully } from './shutdown.js';
import type { Tracing } from './tracing/tracing.js';
import { loadTools } from './tools.js';

// templates/ sits beside src/ in the repository and beside dist/ in the image (/app/templates/default).
const DEFAULT_TEMPLATE_DIR = fileURLToPath(new URL('../templates/default', import.meta.url));
const LISTEN_HOST = '0.0.0.0';
const TRACE_FLUSH_DEADLINE_MS = 2000;

const writeStdout = (line: string) => process.stdout.write(line);

async function main(): Promise<void> {
  const startupLogger = createJsonLogger(writeStdout, 'info', systemClock);
  let config: RuntimeConfig;
  let tools: ToolSet;
  try {
    config = loadConfig(process.env, { defaultTemplateDir: DEFAULT_TEMPLATE_DIR });
    tools = await loadTools(config.agent.templateDir, config.agent.tools);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    startupLogger.error('invalid configuration', { error: error.message });
    process.stderr.write(`agent runtime: ${error.message}\n`);
    process.exit(1);
  }

  const logContext = new LogContext();
  const logger = createJsonLogger(writeStdout, config.settings.logLevel, systemClock, logContext);
  routeModelWarningsTo(logger);
  const { server, tracing } = createRuntime(config, { tools, clock: systemClock, logger, logContext, fetch: providerFetchFor(process.env, process.execArgv).fetch });
  server.listen(config.settings.port, LISTEN_HOST, () => {
    const address = server.address();
    const { agent } = config;
    logger.info('listening', {
      host: LISTEN_HOST,
      port: typeof address === 'object' && address !== null ? address.port : config.settings.port,
      agent_id: agent.id,
      provider: agent.provider ?? null,
      model: agent.model,
      template: agent.templateName,
      tools: Object.keys(tools).length,
      ready: agent.notConfiguredReason === undefined,
    });
    if (agent.notConfiguredReason !== undefined) logger.warn('agent not configured', { reason: agent.notConfiguredReason });
  });
  stopOnSignals(server, tracing, config.settings.shutdownGraceMs, logger);
}

/**
 * The `ai` SDK reports unsupported settings (e.g. a temperature a model ignores) through this
 * global hook; without it they would reach stderr as unstructured process warnings.
 */
function routeModelWarningsTo(logger: Logger): void {
  const hooks = globalThis as { AI_SDK_LOG_WARNINGS?: (warnings: Array<Record<string, unknown>>) => void };
  hooks.AI_SDK_LOG_WARNINGS = (warnings) => {
    for (const warning of warnings) {
      logger.warn('model warning', {
        type: String(warning['type']),
        setting: typeof warning['setting'] === 'string' ? warning['setting'] : undefined,
        details: typeof warning['details'] === 'string' ? warning['details'] : typeof warning['message'] === 'string' ? warning['message'] : undefined,
      });
    }
  };
}

function stopOnSignals(server: Server, tracing: Tracing, graceMs: number, logger: Logger): void {
  const stop = (signal: string) => {
    logger.info('shutting down', { signal, grace_ms: graceMs });
    void closeGracefully(server, graceMs).then(async (outcome) => {
      if (outcome === 'cut') logger.warn('requests still running at the end of the grace period were cut', { grace_ms: graceMs });
      // The last invokes' spans get one export, briefly: a slow trace endpoint must not hold the exit.
      await tracing.shutdown(TRACE_FLUSH_DEADLINE_MS);
      logger.info('stopped', { outcome });
      process.exit(0);
    });
  };
  process.once('SIGTERM', () => stop('SIGTERM'));
  process.once('SIGINT', () => stop('SIGINT'));
}

main().catch((error: unknown) => {
  process.stderr.write(`agent runtime failed to start: ${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
