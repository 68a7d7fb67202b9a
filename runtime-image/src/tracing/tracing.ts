import type { TokenSource } from '../bearer-token-file.js';
import type { Clock } from '../clock.js';
import type { AgentConfig } from '../config.js';
import type { Fetch } from '../language-model.js';
import type { Logger } from '../logger.js';
import type { Provider } from '../providers.js';
import type { RuntimeSettings } from '../settings.js';
import { SpanExporter, type ExportStats } from './span-exporter.js';
import { createInvokeTracer, tracingOff, type Tracer } from './spans.js';

/**
 * Traces are built by hand, a few hundred lines in all, rather than with the
 * OpenTelemetry SDK and its OTLP exporter: those add several megabytes and dozens of
 * packages to an image that is otherwise the `ai` SDK and a logger, and the runtime needs
 * only one trace shape, one exporter and one encoding (OTLP/HTTP JSON, a stable format).
 */
export interface Tracing {
  tracer: Tracer;
  /** Export counters; undefined when tracing is off. */
  stats(): ExportStats | undefined;
  /** One last export at shutdown, for at most `deadlineMs`. */
  shutdown(deadlineMs: number): Promise<void>;
}

/** gen_ai.provider.name in the semantic conventions' registry: the Gemini API (AI Studio) is `gcp.gemini`. */
const PROVIDER_NAME: Readonly<Record<Provider, string>> = { openai: 'openai', anthropic: 'anthropic', google: 'gcp.gemini' };

export function createTracing(
  agent: AgentConfig,
  settings: RuntimeSettings,
  deps: { token: TokenSource | undefined; fetch: Fetch; logger: Logger; clock: Clock },
): Tracing {
  const services = settings.agentServices;
  if (!settings.traces.enabled || services === undefined || deps.token === undefined) {
    return { tracer: tracingOff, stats: () => undefined, shutdown: async () => {} };
  }
  const exporter = new SpanExporter({
    url: `${services.url}/v1/traces`,
    token: deps.token,
    fetch: deps.fetch,
    logger: deps.logger,
    clock: deps.clock,
    origin: { serviceName: agent.name, agentId: agent.id },
    maxQueuedSpans: settings.traces.maxQueuedSpans,
    timeoutMs: settings.traces.exportTimeoutMs,
  }).start();
  const tracer = createInvokeTracer({
    agentId: agent.id,
    agentName: agent.name,
    providerName: agent.provider && PROVIDER_NAME[agent.provider],
    recordContent: settings.traces.recordContent,
    sink: exporter,
  });
  return { tracer, stats: () => exporter.stats(), shutdown: (deadlineMs) => exporter.shutdown(deadlineMs) };
}
