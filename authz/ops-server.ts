import { createServer, type Server, type ServerResponse } from 'node:http';
import { readinessMetrics } from './metrics.js';

export interface OpsEndpoints {
  /** A Registry, or what serves a cluster's workers' metrics added up (authz/cluster.ts). */
  registry: { metrics(): Promise<string>; readonly contentType: string };
  /** Redis answers within the Check deadline: the same question the gRPC health service asks. */
  isReady: () => Promise<boolean>;
}

/**
 * authz's HTTP port for operators (AUTHZ_METRICS_PORT), beside the gRPC port Envoy calls:
 * - GET /metrics: Prometheus text, and agent_platform_authz_ready, /readyz's answer at scrape time.
 * - GET /livez: the process can serve. Answering at all is the proof (a wedged event loop
 *   answers nothing); it never asks Redis, so a Redis outage cannot restart every copy.
 * - GET /readyz, and /healthz for HTTP-only checkers: 200 while Redis answers, else 503
 *   naming Redis. Readiness in gRPC is grpc.health.v1.Health/Check (authz/health.ts).
 */
export function createOpsServer({ registry, isReady }: OpsEndpoints): Server {
  const readyFamily = readinessMetrics(isReady);
  return createServer((request, response) => {
    const path = request.url?.split('?')[0];
    if (request.method !== 'GET') return text(response, 405, 'method not allowed\n');
    if (path === '/metrics') {
      Promise.all([registry.metrics(), readyFamily.metrics()]).then(
        (bodies) => response.writeHead(200, { 'content-type': registry.contentType }).end(bodies.join('')),
        () => text(response, 500, 'metrics unavailable\n'),
      );
      return;
    }
    if (path === '/livez') return json(response, 200, { status: 'ok' });
    if (path === '/readyz' || path === '/healthz') {
      isReady().then(
        (ready) => readiness(response, ready),
        () => readiness(response, false),
      );
      return;
    }
    text(response, 404, 'not found\n');
  });
}

function readiness(response: ServerResponse, ready: boolean): void {
  const dependencies = { redis: ready ? 'ok' : 'unavailable' };
  json(response, ready ? 200 : 503, ready ? { status: 'ok', dependencies } : { status: 'unavailable', message: 'Not ready: redis does not answer', dependencies });
}

function json(response: ServerResponse, status: number, body: unknown): void {
  response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

function text(response: ServerResponse, status: number, body: string): void {
  response.writeHead(status, { 'content-type': 'text/plain' }).end(body);
}
