import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { parse } from 'yaml';
import { systemClock } from '../contract/clock.js';
import { startMetricsServer } from '../control/metrics/server.js';
import { startControl } from './support/control-harness.js';
import { connectTestRedis, startTestAuthz } from './support/edge-authz.js';
import { PROMETHEUS_SERIES, promqlNames, servedNames } from './support/promql-names.js';

/**
 * docs/operations/alerts.yml: valid rules (promtool check rules), each unit-tested firing
 * and not firing (promtool test rules on alerts.test.yml), each with its severity,
 * annotations and runbook entry, and every metric and label it names served by the
 * control API's or authz's /metrics, so a renamed family fails here, not as a silent alert.
 * promtool is Debian's `prometheus` package (scripts/ensure-deps.sh --test-tools).
 */

const run = promisify(execFile);
const RULES = 'docs/operations/alerts.yml';
const RULE_TESTS = 'docs/operations/alerts.test.yml';

interface AlertRule {
  alert: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

const rules: AlertRule[] = (parse(readFileSync(RULES, 'utf8')).groups as { rules: AlertRule[] }[]).flatMap((group) => group.rules);

/** promtool's output, or its complaint with its exit status: any failure is the test's. */
async function promtool(...args: string[]): Promise<string> {
  try {
    const { stdout, stderr } = await run('promtool', args, { timeout: 60_000 });
    return stdout + stderr;
  } catch (error) {
    const { code, stdout, stderr } = error as { code?: number | string; stdout?: string; stderr?: string };
    assert.fail(`promtool ${args.join(' ')} failed (${code}):\n${stdout ?? ''}${stderr ?? ''}`);
  }
}

describe('docs/operations/alerts.yml', function () {
  this.timeout(120_000);

  it('passes promtool check rules, without a warning', async () => {
    const output = await promtool('check', 'rules', RULES);
    assert.match(output, /SUCCESS: \d+ rules found/);
    assert.doesNotMatch(output, /WARNING|FAILED/, output);
  });

  it('passes its unit tests (promtool test rules alerts.test.yml)', async () => {
    const output = await promtool('test', 'rules', RULE_TESTS);
    assert.match(output, /SUCCESS/);
    assert.doesNotMatch(output, /FAILED/, output);
  });

  it('unit-tests every alert at least once firing and once not firing', () => {
    const tests = parse(readFileSync(RULE_TESTS, 'utf8')).tests as { alert_rule_test?: { alertname: string; exp_alerts?: unknown[] }[] }[];
    const checks = tests.flatMap((test) => test.alert_rule_test ?? []);
    for (const { alert } of rules) {
      const own = checks.filter((check) => check.alertname === alert);
      assert.ok(own.some((check) => (check.exp_alerts ?? []).length > 0), `${alert} is never tested firing`);
      assert.ok(own.some((check) => (check.exp_alerts ?? []).length === 0), `${alert} is never tested not firing`);
    }
  });

  it('gives every alert a severity, a summary, a description and a runbook entry in docs/operations.md', () => {
    const runbook = readFileSync('docs/operations.md', 'utf8');
    // GitHub's anchors: the heading lower-cased, spaces made hyphens, other punctuation dropped.
    const anchors = new Set([...runbook.matchAll(/^#{2,4} (.+)$/gm)].map((m) => m[1]!.trim().toLowerCase().replace(/[^\w\s-]/g, '').replace(/\s/g, '-')));
    assert.equal(new Set(rules.map((rule) => rule.alert)).size, rules.length, 'alert names are unique');
    for (const rule of rules) {
      assert.match(rule.labels?.severity ?? '', /^(critical|warning)$/, `${rule.alert}: severity`);
      assert.ok(rule.annotations?.summary, `${rule.alert}: summary`);
      assert.ok(rule.annotations?.description, `${rule.alert}: description`);
      const [file, anchor] = (rule.annotations?.runbook_url ?? '').split('#');
      assert.equal(file, 'docs/operations.md', `${rule.alert}: runbook_url`);
      assert.ok(anchors.has(anchor!), `${rule.alert}: no heading in docs/operations.md for #${anchor}`);
    }
  });

  describe('against what the processes serve', function () {
    let served: Map<string, ReadonlySet<string>>;
    before(async function () {
      const control = await startControl();
      const metricsServer = await startMetricsServer(control.control.metrics.registry, 0, '127.0.0.1');
      const redis = connectTestRedis();
      const authz = await startTestAuthz({ redis, clock: systemClock, agentDomain: 'alerts.test' });
      try {
        const scrape = async (url: string) => (await fetch(url)).text();
        const text = (await scrape(`http://127.0.0.1:${metricsServer.port}/metrics`)) + (await scrape(`http://127.0.0.1:${authz.authz.metricsPort}/metrics`));
        served = new Map([...servedNames(text, [control.control.metrics.registry, authz.authz.metrics.registry]), ...PROMETHEUS_SERIES]);
      } finally {
        await metricsServer.close();
        await authz.close();
        redis.disconnect();
        await control.close();
      }
    });

    it('names only metrics the control API or authz serves, with labels they carry', () => {
      for (const rule of rules) {
        const { metrics, labels } = promqlNames(rule.expr);
        assert.ok(metrics.length > 0, `${rule.alert}: no metric found in ${rule.expr}`);
        for (const metric of metrics) assert.ok(served.has(metric), `${rule.alert}: ${metric} is not served`);
        for (const label of labels) {
          assert.ok(metrics.some((metric) => served.get(metric)?.has(label)), `${rule.alert}: label ${label} is on none of ${metrics.join(', ')}`);
        }
      }
    });

    it('the check can fail: the old names are caught', () => {
      assert.ok(!served.has('platform_control_http_requests_total'));
      assert.ok(!served.get('agent_platform_control_http_requests_total')!.has('status'));
      assert.ok(!served.get('agent_platform_authz_checks_total')!.has('outcome'));
    });
  });
});
