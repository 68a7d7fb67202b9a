import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { loadConfig } from '../control/config/config.js';
import { createControlMetrics } from '../control/metrics/control-metrics.js';
import { startMetricsServer, type MetricsServer } from '../control/metrics/server.js';
import { protectedEndpointsOf } from '../control/orchestrator/create.js';
import { instrumentOrchestrator } from '../control/orchestrator/instrumented.js';
import type { Orchestrator } from '../control/orchestrator/types.js';
import { startControl, type TestControl } from './support/control-harness.js';
import { createAgent } from './support/control-api.js';
import { stubMetricSources } from './support/metric-sources.js';
import { parseSamples, sampleValue, type Sample } from './support/prometheus-text.js';

/**
 * The control API's Prometheus metrics as an operator scrapes them: the server main.ts
 * starts on CONTROL_METRICS_PORT (here port 0), over the registry buildControl feeds.
 */

async function scrape(server: MetricsServer): Promise<{ text: string; samples: Sample[] }> {
  const response = await fetch(`http://127.0.0.1:${server.port}/metrics`);
  assert.equal(response.status, 200);
  assert.match(response.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
  const text = await response.text();
  return { text, samples: parseSamples(text) };
}

describe('control metrics: GET /metrics on the metrics port', function () {
  let control: TestControl;
  let server: MetricsServer;
  before(async () => {
    control = await startControl();
    server = await startMetricsServer(control.control.metrics.registry, 0, '127.0.0.1');
  });
  after(async () => {
    await server?.close();
    await control?.close();
  });

  it('counts and times requests by route template and status code, never by agent id', async () => {
    const { token } = await control.signUp();
    const agent = await createAgent(control, token, { name: 'metered' });
    for (let i = 0; i < 3; i += 1) assert.equal((await control.request('GET', `/agents/${agent.id}`, { token })).status, 200);
    assert.equal((await control.request('GET', '/agents/00000000-0000-0000-0000-000000000000', { token })).status, 404);
    assert.equal((await control.request('GET', '/no/such/endpoint')).status, 404);

    const { text, samples } = await scrape(server);
    const requests = (labels: Record<string, string>) => sampleValue(samples, 'agent_platform_control_http_requests_total', labels);
    assert.equal(requests({ method: 'GET', route: '/v1/agents/:id', code: '200' }), 3);
    assert.equal(requests({ method: 'GET', route: '/v1/agents/:id', code: '404' }), 1);
    assert.equal(requests({ method: 'POST', route: '/v1/agents', code: '201' }), 1);
    assert.equal(requests({ method: 'GET', route: 'unmatched', code: '404' }), 1);
    assert.equal(sampleValue(samples, 'agent_platform_control_http_request_duration_seconds_count', { method: 'GET', route: '/v1/agents/:id', code: '200' }), 3);
    assert.ok(sampleValue(samples, 'agent_platform_control_http_request_duration_seconds_sum', { method: 'GET', route: '/v1/agents/:id', code: '200' })! > 0);
    // Ids and slugs in labels would make a series per agent.
    for (const value of [agent.id, agent.slug, '00000000-0000-0000-0000-000000000000']) assert.ok(!text.includes(value), `${value} appears in /metrics`);
    const routes = new Set(samples.filter((s) => s.name === 'agent_platform_control_http_requests_total').map((s) => s.labels.route));
    for (const route of routes) assert.match(route!, /^(\/[\w/:.-]*|unmatched)$/);
  });

  it('counts agents by status in Postgres at scrape time', async () => {
    const { token } = await control.signUp();
    const agent = await createAgent(control, token, { name: 'counted' });
    const before = sampleValue((await scrape(server)).samples, 'agent_platform_control_agents', { status: agent.status })!;
    await createAgent(control, token, { name: 'counted too' });
    const { samples } = await scrape(server);
    assert.equal(sampleValue(samples, 'agent_platform_control_agents', { status: agent.status }), before + 1);
    // Every status has its series, zero or not, so a dashboard's stack keeps its colours.
    assert.equal(samples.filter((s) => s.name === 'agent_platform_control_agents').length, 7);
  });

  it("records the loops' passes and resets the flush lag on a successful flush", async () => {
    const flushStarted = performance.now();
    await control.control.loops.flusher.flush();
    const { samples } = await scrape(server);
    const scraped = performance.now();
    // The harness ran the reconciler's first pass; the test ran a flush.
    assert.ok(sampleValue(samples, 'agent_platform_control_loop_pass_duration_seconds_count', { loop: 'reconciler', outcome: 'ran' })! >= 1);
    assert.ok(sampleValue(samples, 'agent_platform_control_loop_pass_duration_seconds_count', { loop: 'usage-flusher', outcome: 'ran' })! >= 1);
    const lag = sampleValue(samples, 'agent_platform_control_usage_flush_lag_seconds')!;
    assert.ok(lag >= 0 && lag <= (scraped - flushStarted) / 1000, `lag ${lag} s is older than the flush just made`);
  });

  it('reports Postgres and Redis up, the webhook outbox and certificate expiries, asked at scrape time', async () => {
    const { text, samples } = await scrape(server);
    assert.equal(sampleValue(samples, 'agent_platform_control_dependency_up', { dependency: 'postgres' }), 1);
    assert.equal(sampleValue(samples, 'agent_platform_control_dependency_up', { dependency: 'redis' }), 1);
    assert.equal(typeof sampleValue(samples, 'agent_platform_webhook_outbox_deliveries', { state: 'due' }), 'number');
    assert.equal(typeof sampleValue(samples, 'agent_platform_webhook_outbox_deliveries', { state: 'scheduled' }), 'number');
    assert.ok(sampleValue(samples, 'agent_platform_webhook_outbox_oldest_due_age_seconds')! >= 0);
    // No active custom domain here: the family is declared, with no series.
    assert.match(text, /^# TYPE agent_platform_domain_certificate_expiry_timestamp_seconds gauge$/m);
  });

  it('carries the default process metrics: CPU, heap, event-loop lag', async () => {
    const { samples } = await scrape(server);
    assert.ok(sampleValue(samples, 'process_cpu_user_seconds_total')! > 0);
    assert.ok(sampleValue(samples, 'nodejs_heap_size_used_bytes')! > 0);
    assert.ok(sampleValue(samples, 'nodejs_eventloop_lag_seconds')! >= 0);
  });

  it('serves /metrics and nothing else', async () => {
    assert.equal((await fetch(`http://127.0.0.1:${server.port}/v1/agents`)).status, 404);
    assert.equal((await fetch(`http://127.0.0.1:${server.port}/livez`)).status, 404);
    assert.equal((await fetch(`http://127.0.0.1:${server.port}/metrics`, { method: 'POST' })).status, 405);
  });
});

describe('control metrics: the port', function () {
  const settings = { DATABASE_URL: 'postgres://u:p@127.0.0.1/platform', REDIS_URL: 'redis://127.0.0.1:6379', MASTER_KEY: randomBytes(32).toString('base64') };

  it('is CONTROL_METRICS_PORT, 7072 by default, never the API port', function () {
    assert.equal(loadConfig(settings).metricsPort, 7072);
    assert.equal(loadConfig({ ...settings, CONTROL_METRICS_PORT: '9100' }).metricsPort, 9100);
    assert.throws(() => loadConfig({ ...settings, CONTROL_PORT: '7000', CONTROL_METRICS_PORT: '7000' }), /CONTROL_METRICS_PORT: must differ from CONTROL_PORT/);
  });

  it('is fenced from agents like the API port: its families count every account', function () {
    const endpoints = protectedEndpointsOf(loadConfig({ ...settings, CONTROL_HOST: '10.0.0.5', CONTROL_METRICS_PORT: '9100' }));
    assert.ok(endpoints.some((e) => e.host === '10.0.0.5' && e.port === 9100), JSON.stringify(endpoints));
  });
});

describe('control metrics: the agents count when Postgres fails', function () {
  it('leaves the family empty and counts the failure, and the scrape still answers', async () => {
    const failing = createControlMetrics(stubMetricSources({ countAgentsByStatus: () => Promise.reject(new Error('connection refused')) }));
    const hung = createControlMetrics(stubMetricSources({ countAgentsByStatus: () => new Promise(() => undefined) }));
    for (const metrics of [failing, hung]) {
      const samples = parseSamples(await metrics.registry.metrics());
      assert.equal(samples.filter((s) => s.name === 'agent_platform_control_agents').length, 0);
      assert.equal(sampleValue(samples, 'agent_platform_control_agents_count_failures_total'), 1);
      assert.ok(sampleValue(samples, 'process_cpu_user_seconds_total')! > 0);
    }
  });
});

describe('control metrics: dependencies and Postgres-read families', function () {
  it('reports a dependency that does not answer as 0, and certificate expiries by hostname', async () => {
    const notAfter = new Date('2030-01-02T03:04:05Z');
    const metrics = createControlMetrics(
      stubMetricSources({
        checkReadiness: async () => ({ ready: false, dependencies: { postgres: 'unavailable', redis: 'ok' } }),
        certificateExpiries: async () => new Map([['shop.example.com', notAfter]]),
        webhookBacklog: async () => ({ due: 3, scheduled: 2, oldestDueSeconds: 42.5 }),
      }),
    );
    const samples = parseSamples(await metrics.registry.metrics());
    assert.equal(sampleValue(samples, 'agent_platform_control_dependency_up', { dependency: 'postgres' }), 0);
    assert.equal(sampleValue(samples, 'agent_platform_control_dependency_up', { dependency: 'redis' }), 1);
    assert.equal(sampleValue(samples, 'agent_platform_domain_certificate_expiry_timestamp_seconds', { hostname: 'shop.example.com' }), notAfter.getTime() / 1000);
    assert.equal(sampleValue(samples, 'agent_platform_webhook_outbox_deliveries', { state: 'due' }), 3);
    assert.equal(sampleValue(samples, 'agent_platform_webhook_outbox_deliveries', { state: 'scheduled' }), 2);
    assert.equal(sampleValue(samples, 'agent_platform_webhook_outbox_oldest_due_age_seconds'), 42.5);
  });

  it('leaves the Postgres-read families empty when the read fails, and still answers', async () => {
    const refused = () => Promise.reject(new Error('connection refused'));
    const metrics = createControlMetrics(stubMetricSources({ certificateExpiries: refused, webhookBacklog: refused }));
    const samples = parseSamples(await metrics.registry.metrics());
    assert.equal(samples.filter((s) => s.name === 'agent_platform_webhook_outbox_deliveries' || s.name.startsWith('agent_platform_domain_')).length, 0);
    assert.ok(Number.isNaN(sampleValue(samples, 'agent_platform_webhook_outbox_oldest_due_age_seconds')), 'NaN, never a reassuring 0');
    assert.ok(sampleValue(samples, 'process_cpu_user_seconds_total')! > 0);
  });
});

describe('control metrics: orchestrator calls', function () {
  it('times every call by driver and operation and counts the failed ones, passing results and errors through', async () => {
    const metrics = createControlMetrics(stubMetricSources());
    const refused = new Error('no such job');
    // The decorator is what is under test here, so the driver answers as scripted: one call
    // succeeds, one is refused. The real podman driver through the composition is below.
    const driver = {
      name: 'scripted',
      status: async () => null,
      scale: async () => {
        throw refused;
      },
    } as unknown as Orchestrator;
    const instrumented = instrumentOrchestrator(driver, metrics.onOrchestratorCall);
    assert.equal(await instrumented.status('a'), null);
    await assert.rejects(instrumented.scale('a', 2), (error) => error === refused);

    const samples = parseSamples(await metrics.registry.metrics());
    assert.equal(sampleValue(samples, 'agent_platform_control_orchestrator_call_duration_seconds_count', { driver: 'scripted', operation: 'status' }), 1);
    assert.equal(sampleValue(samples, 'agent_platform_control_orchestrator_call_duration_seconds_count', { driver: 'scripted', operation: 'scale' }), 1);
    assert.equal(sampleValue(samples, 'agent_platform_control_orchestrator_call_errors_total', { driver: 'scripted', operation: 'scale' }), 1);
    assert.equal(sampleValue(samples, 'agent_platform_control_orchestrator_call_errors_total', { driver: 'scripted', operation: 'status' }), undefined);
  });

  describe('with the podman driver', function () {
    let control: TestControl;
    before(async function () {
      this.timeout(300_000);
      control = await startControl({}, { orchestrate: true });
    });
    after(async () => control?.close());

    it("records the driver's calls made through the composition (the first reconcile)", async () => {
      const samples = parseSamples(await control.control.metrics.registry.metrics());
      assert.ok(sampleValue(samples, 'agent_platform_control_orchestrator_call_duration_seconds_count', { driver: 'podman', operation: 'reconcile' })! >= 1);
    });
  });
});
