import type { MetricSources } from '../../control/metrics/control-metrics.js';

/** Sources for a control's metrics without Postgres or Redis: nothing counted, every dependency answering; override what a test is about. */
export function stubMetricSources(overrides: Partial<MetricSources> = {}): MetricSources {
  return {
    countAgentsByStatus: async () => new Map(),
    checkReadiness: async () => ({ ready: true, dependencies: { postgres: 'ok', redis: 'ok' } }),
    certificateExpiries: async () => new Map(),
    webhookBacklog: async () => ({ due: 0, scheduled: 0, oldestDueSeconds: 0 }),
    ...overrides,
  };
}
