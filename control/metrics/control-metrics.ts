import { Registry } from 'prom-client';
import { processMetrics } from '../../contract/process-metrics.js';
import type { Readiness } from '../http/readiness.js';
import type { RequestObserver } from '../http/request-observer.js';
import type { OrchestratorCallObserver } from '../orchestrator/instrumented.js';
import type { OutboxBacklog } from '../repositories/webhook-outbox.js';
import type { ReconcilePassed } from '../services/agent-events.js';
import type { PassObserver } from '../services/periodic-pass.js';
import type { ForwardDroppedObserver } from '../services/trace-forwarder.js';
import type { SpansDroppedObserver } from '../services/trace-ingest.js';
import { agentMetrics } from './agent-metrics.js';
import { dependencyMetrics } from './dependency-metrics.js';
import { domainMetrics } from './domain-metrics.js';
import { httpMetrics } from './http-metrics.js';
import { loopMetrics } from './loop-metrics.js';
import { orchestratorMetrics } from './orchestrator-metrics.js';
import { reconcileMetrics } from './reconcile-metrics.js';
import { traceMetrics } from './trace-metrics.js';
import { webhookMetrics } from './webhook-metrics.js';

/** The control API's Prometheus families, fed through the observers the lower layers offer. */
export interface ControlMetrics {
  /** What GET /metrics serves: this control's families and the process's. */
  readonly registry: Registry;
  readonly onRequest: RequestObserver;
  readonly onPass: PassObserver;
  readonly onOrchestratorCall: OrchestratorCallObserver;
  /** Subscribed to AgentRunner's ReconcilePassed (control/compose.ts). */
  readonly reconcilePassed: (event: ReconcilePassed) => void;
  /** Told of every span POST /v1/traces refuses. */
  readonly onSpansDropped: SpansDroppedObserver;
  /** Told of every stored span that could not be forwarded to OTEL_EXPORTER_OTLP_ENDPOINT. */
  readonly onForwardDropped: ForwardDroppedObserver;
}

/** What the families asked at scrape time read (control/compose.ts passes the repositories' and the readiness probe's). */
export interface MetricSources {
  /** Agents by status. */
  countAgentsByStatus: () => Promise<Map<string, number>>;
  /** Whether Postgres and Redis answer: GET /readyz's check. */
  checkReadiness: () => Promise<Readiness>;
  /** Each active custom domain's certificate expiry, by hostname. */
  certificateExpiries: () => Promise<Map<string, Date>>;
  /** The webhook outbox's due and scheduled deliveries. */
  webhookBacklog: () => Promise<OutboxBacklog>;
}

/** A registry per control (tests build several in one process), merged with the one process registry. */
export function createControlMetrics(sources: MetricSources): ControlMetrics {
  const own = new Registry();
  const metrics = {
    onRequest: httpMetrics(own),
    onPass: loopMetrics(own),
    onOrchestratorCall: orchestratorMetrics(own),
    reconcilePassed: reconcileMetrics(own),
    ...traceMetrics(own),
  };
  agentMetrics(own, sources.countAgentsByStatus);
  dependencyMetrics(own, sources.checkReadiness);
  domainMetrics(own, sources.certificateExpiries);
  webhookMetrics(own, sources.webhookBacklog);
  return { registry: Registry.merge([own, processMetrics()]), ...metrics };
}
