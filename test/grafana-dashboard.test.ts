import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import type { Registry } from 'prom-client';
import { systemClock } from '../contract/clock.js';
import { createControlMetrics } from '../control/metrics/control-metrics.js';
import { startMetricsServer } from '../control/metrics/server.js';
import { connectTestRedis, startTestAuthz } from './support/edge-authz.js';
import { stubMetricSources } from './support/metric-sources.js';
import { ENVOY_STATS, promqlNames, servedNames } from './support/promql-names.js';

/**
 * docs/operations/grafana-dashboard.json: a dashboard Grafana imports (its JSON model's
 * required parts), whose every PromQL query names metrics and labels the control API's
 * or authz's /metrics really serves, so a renamed family fails here, not on a blank panel.
 */

type Node = Record<string, any>;

const dashboard: Node = JSON.parse(readFileSync(new URL('../docs/operations/grafana-dashboard.json', import.meta.url), 'utf8'));
const queryPanels = (dashboard.panels as Node[]).filter((panel) => panel.type !== 'row');
const expressions = (): string[] => [
  ...queryPanels.flatMap((panel) => (panel.targets as Node[]).map((target) => target.expr as string)),
  ...(dashboard.templating.list as Node[]).filter((v) => v.type === 'query').map((v) => v.query.query as string),
];

/** Grafana's own variables in queries. */
const GRAFANA_VARIABLES = ['__rate_interval', '__range', '__interval'];

describe('docs/operations/grafana-dashboard.json', function () {
  it('is a dashboard Grafana imports: schemaVersion, uid, panels with unique ids on the 24-column grid, a Prometheus datasource variable', function () {
    assert.equal(typeof dashboard.schemaVersion, 'number');
    assert.ok(dashboard.schemaVersion >= 36, 'a schema Grafana 9 and later read without migration');
    assert.match(dashboard.uid, /^[\w-]{1,40}$/);
    assert.ok(dashboard.title);
    const ids = (dashboard.panels as Node[]).map((panel) => panel.id);
    assert.equal(new Set(ids).size, ids.length, 'panel ids are unique');
    for (const panel of dashboard.panels as Node[]) {
      const { x, y, w, h } = panel.gridPos;
      assert.ok(Number.isInteger(x + y + w + h) && x >= 0 && w > 0 && h > 0 && x + w <= 24, `panel ${panel.id} fits the grid`);
    }
    const datasource = (dashboard.templating.list as Node[]).find((v) => v.type === 'datasource');
    assert.deepEqual([datasource?.name, datasource?.query], ['datasource', 'prometheus']);
    const defined = new Set([...(dashboard.templating.list as Node[]).map((v) => v.name), ...GRAFANA_VARIABLES]);
    for (const panel of queryPanels) {
      assert.deepEqual(panel.datasource, { type: 'prometheus', uid: '${datasource}' }, panel.title);
      assert.ok(panel.targets.length > 0, `${panel.title} has a query`);
      const refIds = (panel.targets as Node[]).map((target) => target.refId);
      assert.equal(new Set(refIds).size, refIds.length, `${panel.title}: refIds are unique`);
      for (const target of panel.targets as Node[]) {
        for (const [, variable] of String(target.expr).matchAll(/\$(\w+)/g)) assert.ok(defined.has(variable!), `${panel.title}: $${variable} is not defined`);
      }
    }
  });

  it('covers what operators watch: requests, agents, loops, flush lag, the orchestrator, dependencies, webhooks, certificates, authz, Envoy and the processes', function () {
    const all = expressions().join('\n');
    for (const family of [
      'agent_platform_control_http_requests_total', 'agent_platform_control_http_request_duration_seconds_bucket', 'agent_platform_control_agents',
      'agent_platform_control_loop_pass_duration_seconds_bucket', 'agent_platform_control_loop_pass_failures_total', 'agent_platform_control_usage_flush_lag_seconds',
      'agent_platform_control_orchestrator_call_duration_seconds_bucket', 'agent_platform_control_orchestrator_call_errors_total',
      'agent_platform_control_dependency_up', 'agent_platform_webhook_outbox_deliveries', 'agent_platform_domain_certificate_expiry_timestamp_seconds',
      'agent_platform_authz_checks_total', 'agent_platform_authz_worker_checks_total', 'agent_platform_authz_ready',
      'envoy_http_downstream_rq_total', 'envoy_http_downstream_rq_xx', 'envoy_cluster_upstream_rq_xx', 'envoy_cluster_upstream_rq_time_bucket',
      'envoy_http_ext_authz_denied', 'envoy_cluster_ext_authz_error',
      'process_cpu_seconds_total', 'nodejs_heap_size_used_bytes', 'nodejs_eventloop_lag_p99_seconds',
    ]) assert.match(all, new RegExp(`\\b${family}\\b`), family);
  });

  describe('against what the processes serve', function () {
    let served: Map<string, ReadonlySet<string>>;
    before(async function () {
      const control = createControlMetrics(stubMetricSources());
      const server = await startMetricsServer(control.registry, 0, '127.0.0.1');
      const redis = connectTestRedis();
      const authz = await startTestAuthz({ redis, clock: systemClock, agentDomain: 'grafana-dashboard.test' });
      try {
        const scrape = async (url: string) => (await fetch(url)).text();
        const text = (await scrape(`http://127.0.0.1:${server.port}/metrics`)) + (await scrape(`http://127.0.0.1:${authz.authz.metricsPort}/metrics`));
        served = new Map([...servedNames(text, [control.registry, authz.authz.metrics.registry]), ...ENVOY_STATS]);
      } finally {
        await server.close();
        await authz.close();
        redis.disconnect();
      }
    });

    it("names only metrics the control API's or authz's /metrics or Envoy's standard stats serve, with labels they carry", function () {
      for (const expr of expressions()) {
        const { metrics, labels } = promqlNames(expr);
        assert.ok(metrics.length > 0, `no metric found in ${expr}`);
        for (const metric of metrics) assert.ok(served.has(metric), `${metric} (in ${expr}) is not served`);
        for (const label of labels) {
          assert.ok(metrics.some((metric) => served.get(metric)?.has(label)), `label ${label} (in ${expr}) is on none of ${metrics.join(', ')}`);
        }
      }
    });

    it('the check can fail: a misspelt metric or label is caught', function () {
      assert.deepEqual(promqlNames('histogram_quantile(0.95, sum by (le, route) (rate(a_seconds_bucket{job=~"$job", status="5xx"}[$__rate_interval]))) / on (route) b_total'), {
        metrics: ['a_seconds_bucket', 'b_total'],
        labels: ['job', 'status', 'le', 'route', 'route'],
      });
      const unknownMetric = promqlNames('sum by (route) (rate(agent_platform_control_http_request_total{job=~"$job"}[5m]))');
      assert.ok(!unknownMetric.metrics.every((m) => served.has(m)));
      const unknownLabel = promqlNames('sum by (status) (rate(agent_platform_control_http_requests_total[5m]))');
      assert.deepEqual(unknownLabel.metrics, ['agent_platform_control_http_requests_total']);
      assert.ok(!served.get('agent_platform_control_http_requests_total')!.has('status'), 'the status label is code now');
    });
  });
});
