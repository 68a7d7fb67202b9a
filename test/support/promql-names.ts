import type { Registry } from 'prom-client';

/** Labels Prometheus adds to every scraped series. */
export const TARGET_LABELS = ['job', 'instance'];

/** Series Prometheus itself writes for every target (not served by any /metrics). */
export const PROMETHEUS_SERIES = new Map([['up', new Set(TARGET_LABELS)]]);

/**
 * Envoy's standard stats as its /stats/prometheus names them (no Envoy runs in the tests):
 * the stat with dots made underscores under `envoy_`, and the default tags extracted as
 * labels (source/common/config/well_known_names.h: envoy.cluster_name,
 * envoy.http_conn_manager_prefix, envoy.response_code_class). Which stats exist:
 * - HTTP connection manager, `http.<stat_prefix>.` (envoy.yaml's `agent_edge`):
 *   https://www.envoyproxy.io/docs/envoy/latest/configuration/http/http_conn_man/stats
 * - clusters, `cluster.<name>.` (`agents`, `authz`):
 *   https://www.envoyproxy.io/docs/envoy/latest/configuration/upstream/cluster_manager/cluster_stats
 * - the ext_authz HTTP filter, `cluster.<route target cluster>.ext_authz.` and
 *   `http.<stat_prefix>.ext_authz.` (ok, denied, error, disabled, failure_mode_allowed):
 *   https://www.envoyproxy.io/docs/envoy/latest/configuration/http/http_filters/ext_authz_filter#statistics
 * Histograms (`_time`) are in milliseconds.
 */
export const ENVOY_STATS: ReadonlyMap<string, ReadonlySet<string>> = (() => {
  const hcm = ['envoy_http_conn_manager_prefix'];
  const cluster = ['envoy_cluster_name'];
  const stats = new Map<string, string[]>();
  for (const name of ['downstream_rq_total', 'downstream_cx_active', 'downstream_rq_active']) stats.set(`envoy_http_${name}`, hcm);
  stats.set('envoy_http_downstream_rq_xx', [...hcm, 'envoy_response_code_class']);
  for (const suffix of ['_bucket', '_sum', '_count']) stats.set(`envoy_http_downstream_rq_time${suffix}`, suffix === '_bucket' ? [...hcm, 'le'] : hcm);
  for (const name of ['upstream_rq_total', 'upstream_cx_active', 'upstream_rq_active', 'upstream_rq_timeout']) stats.set(`envoy_cluster_${name}`, cluster);
  stats.set('envoy_cluster_upstream_rq_xx', [...cluster, 'envoy_response_code_class']);
  for (const suffix of ['_bucket', '_sum', '_count']) stats.set(`envoy_cluster_upstream_rq_time${suffix}`, suffix === '_bucket' ? [...cluster, 'le'] : cluster);
  for (const name of ['ok', 'denied', 'error', 'disabled', 'failure_mode_allowed']) {
    stats.set(`envoy_cluster_ext_authz_${name}`, cluster);
    stats.set(`envoy_http_ext_authz_${name}`, hcm);
  }
  return new Map([...stats].map(([name, labels]) => [name, new Set([...labels, ...TARGET_LABELS])]));
})();

/** The metric names and label names a PromQL expression refers to (functions and keywords excluded). */
export function promqlNames(expr: string): { metrics: string[]; labels: string[] } {
  const labels: string[] = [];
  let rest = expr.replace(/#.*$/gm, ' ').replace(/"(?:[^"\\]|\\.)*"/g, '""');
  rest = rest.replace(/\{([^}]*)\}/g, (_, matchers: string) => {
    for (const [, label] of matchers.matchAll(/([a-zA-Z_]\w*)\s*(?:=~|!~|!=|=)/g)) labels.push(label!);
    return ' ';
  });
  rest = rest.replace(/\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)/g, (_, list: string) => {
    labels.push(...list.split(',').map((label) => label.trim()).filter(Boolean));
    return ' ';
  });
  rest = rest.replace(/\[[^\]]*\]/g, ' ');
  // label_values(metric, label): the second argument is a label.
  rest = rest.replace(/label_values\(\s*([a-zA-Z_:][\w:]*)\s*,\s*([a-zA-Z_]\w*)\s*\)/g, (_, metric: string, label: string) => {
    labels.push(label);
    return ` ${metric} `;
  });
  // Binary operators and modifiers spelt as words are no metrics.
  rest = rest.replace(/\b(?:and|or|unless|offset|bool)\b/g, ' ');
  const metrics = [...rest.matchAll(/(?<![\w$.])([a-zA-Z_:][\w:]*)\b(?!\s*\()/g)].map((m) => m[1]!);
  return { metrics, labels };
}

/** Sample names the scraped families give (a histogram's _bucket, _sum, _count) with their label names. */
export function servedNames(text: string, registries: Registry[]): Map<string, Set<string>> {
  const types = new Map([...text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map((m) => [m[1]!, m[2]!]));
  const labelsOf = new Map<string, string[]>();
  for (const registry of registries) {
    for (const metric of registry.getMetricsAsArray() as unknown as { name: string; labelNames?: string[] }[]) labelsOf.set(metric.name, metric.labelNames ?? []);
  }
  const served = new Map<string, Set<string>>();
  for (const [family, type] of types) {
    const labels = new Set([...(labelsOf.get(family) ?? []), ...TARGET_LABELS]);
    served.set(family, labels);
    if (type === 'histogram' || type === 'summary') {
      for (const suffix of ['_sum', '_count']) served.set(family + suffix, labels);
      served.set(`${family}_bucket`, new Set([...labels, 'le']));
    }
  }
  return served;
}
