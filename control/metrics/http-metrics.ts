import { Counter, Histogram, type Registry } from 'prom-client';
import type { RequestObserver } from '../http/request-observer.js';

/**
 * Requests counted and timed by method, route template and status code: the API's rate,
 * errors and latency. The status label is `code`, as Prometheus' own HTTP metrics and most
 * exporters name it, so the usual `code=~"5.."` queries work as they are.
 */
export function httpMetrics(registry: Registry): RequestObserver {
  const labelNames = ['method', 'route', 'code'] as const;
  const requests = new Counter({
    name: 'agent_platform_control_http_requests_total',
    help: 'HTTP requests answered, by method, route template (never the raw path) and status code.',
    labelNames,
    registers: [registry],
  });
  const duration = new Histogram({
    name: 'agent_platform_control_http_request_duration_seconds',
    help: 'Time from receiving an HTTP request to answering it, by method, route template and status code; an event stream counts until it ends.',
    labelNames,
    // Most answers are one or two Postgres round trips; the top buckets show orchestrator-bound and streamed ones.
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [registry],
  });
  return ({ method, route, status, durationMs }) => {
    const labels = { method, route, code: String(status) };
    requests.inc(labels);
    duration.observe(labels, durationMs / 1000);
  };
}
