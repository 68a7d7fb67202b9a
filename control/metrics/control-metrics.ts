import { Registry } from 'prom-client';
import { processMetrics } from '../../contract/process-metrics.js';
import type { RequestObserver } from '../http/request-observer.js';
import type { OrchestratorCallObserver } from '../orchestrator/instrumented.js';
import type { ReconcilePassed } from '../services/agent-events.js';
import type { PassObserver } from '../services/periodic-pass.js';
import { agentMetrics } from './agent-metrics.js';
import { httpMetrics } from './http-metrics.js';
import { loopMetrics } from './loop-metrics.js';
import { orchestratorMetrics } from './orchestrator-metrics.js';
import { reconcileMetrics } from './reconcile-metrics.js';

/** The control API's Prometheus families, fed through the observers the lower layers offer. */
export interface ControlMetrics {
  /** What GET /metrics serves: this control's families and the process's. */
  readonly registry: Registry;
  readonly onRequest: RequestObserver;
  readonly onPass: PassObserver;
  readonly onOrchestratorCall: OrchestratorCallObserver;
  /** Subscribed to AgentRunner's ReconcilePassed (control/compose.ts). */
  readonly reconcilePassed: (event: ReconcilePassed) => void;
}

export interface MetricSources {
  /** Agents by status, asked at scrape time. */
  countAgentsByStatus: () => Promise<Map<string, number>>;
}

/** A registry per control (tests build several in one process), merged with the one process registry. */
export function createControlMetrics({ countAgentsByStatus }: MetricSources): ControlMetrics {
  const own = new Registry();
  const metrics = {
    onRequest: httpMetrics(own),
    onPass: loopMetrics(own),
    onOrchestratorCall: orchestratorMetrics(own),
    reconcilePassed: reconcileMetrics(own),
  };
  agentMetrics(own, countAgentsByStatus);
  return { registry: Registry.merge([own, processMetrics()]), ...metrics };
}
