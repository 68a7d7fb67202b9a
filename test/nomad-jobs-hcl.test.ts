import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parse as parseHcl } from '@cdktf/hcl2json';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { parse as parseYaml } from 'yaml';
import { loadAuthzConfig } from '../authz/config.js';
import { systemClock } from '../contract/clock.js';
import { loadConfig } from '../control/config.js';
import { ConfigError } from '../control/settings-reader.js';
import { createApp } from '../control/http/app.js';
import { startMetricsServer } from '../control/metrics/server.js';
import { loadEnvoyRoot } from '../proto/load.js';
import { freePort } from '../scripts/lib/local-services.js';
import { connectTestRedis, startTestAuthz } from './support/edge-authz.js';
import { EnvoySchema } from './support/envoy-schema.js';
import { functionCalls, NOMAD_FUNCTIONS } from './support/nomad-functions.js';
import {
  CONSUL_ACL_RULES_FILE,
  NOMAD_ACL_POLICY_FILE,
  NOMAD_JOB_FILE,
  checkHcl,
  type BlockSpec,
  type SpecIssue,
} from './support/nomad-spec.js';

/**
 * nomad-jobs/ as Nomad would read it, without Nomad: every file parses as HCL, names only
 * what Nomad's job specification (or ACL policy syntax) has, passes the settings its
 * program actually reads, and the Envoy template is envoy/envoy.yaml but for the authz
 * endpoints.
 */

const JOBS_DIR = new URL('../nomad-jobs/', import.meta.url);
const ENVOY_YAML = new URL('../envoy/envoy.yaml', import.meta.url);

/** Settings that must never be plain job env: anyone who can read the job would read them. */
const SECRET_SETTINGS = ['DATABASE_URL', 'REDIS_URL', 'MASTER_KEYS', 'NOMAD_TOKEN', 'CONSUL_HTTP_TOKEN'];

type Body = Record<string, any>;

const hclFiles = () => readdirSync(JOBS_DIR).filter((name) => name.endsWith('.hcl')).sort();
const readText = (name: string) => readFileSync(new URL(name, JOBS_DIR), 'utf8');
const parseFile = (name: string, text = readText(name)) => parseHcl(name, text) as Promise<Body>;

function specFor(name: string): BlockSpec {
  if (name.endsWith('.nomad.hcl')) return NOMAD_JOB_FILE;
  if (name.endsWith('-acl-policy.hcl')) return NOMAD_ACL_POLICY_FILE;
  if (name.endsWith('-consul-policy.hcl')) return CONSUL_ACL_RULES_FILE;
  throw new Error(`${name}: unknown kind of HCL file (expected *.nomad.hcl, *-acl-policy.hcl or *-consul-policy.hcl)`);
}

const describeIssues = (issues: SpecIssue[]) => issues.map((issue) => `  ${issue.path}: ${issue.message}`).join('\n');

/** The only labelled block `name` in `body`, with its label. */
function only(body: Body, name: string): { label: string; body: Body } {
  const labelled = body[name] as Record<string, Body[]> | undefined;
  assert.ok(labelled, `no ${name} block`);
  const labels = Object.keys(labelled);
  assert.equal(labels.length, 1, `expected one ${name} block, got ${labels.join(', ')}`);
  const label = labels[0]!;
  return { label, body: labelled[label]![0]! };
}

interface ParsedJob {
  id: string;
  job: Body;
  group: Body;
  task: Body;
}

async function readJob(file: string): Promise<ParsedJob> {
  const { label: id, body: job } = only(await parseFile(file), 'job');
  const group = only(job, 'group').body;
  return { id, job, group, task: only(group, 'task').body };
}

/** The container port (`to`) of the group's port labelled `label`. */
function portTo(group: Body, label: string): number {
  const port = (group.network[0].port as Record<string, Body[] | undefined>)[label]?.[0];
  assert.ok(port, `no port "${label}" in the group's network`);
  return port.to;
}

/** Names a task gets as environment variables: its env block and every template with env = true. */
function envNames(task: Body): { plain: string[]; templated: string[] } {
  const plain = Object.keys(task.env?.[0] ?? {});
  const templated = ((task.template ?? []) as Body[])
    .filter((template) => template.env === true)
    .flatMap((template) => [...String(template.data).matchAll(/^\s*([A-Za-z_][A-Za-z0-9_]*)=/gm)].map((match) => match[1]!));
  return { plain, templated };
}

/** Every environment variable name `load` reads, found by handing it an env that records reads. */
function settingsReadBy(load: (env: Record<string, string | undefined>) => unknown, base: Record<string, string>) {
  const read = new Set<string>();
  const env = new Proxy({ ...base } as Record<string, string | undefined>, {
    get(target, name) {
      if (typeof name === 'string') read.add(name);
      return typeof name === 'string' ? target[name] : undefined;
    },
  });
  let problems: string[] = [];
  try {
    load(env);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    problems = error.problems;
  }
  return { read, problems };
}

interface ConsulInstance {
  Address: string;
  Port: number;
}

/**
 * Renders the two consul-template constructs the Envoy template uses,
 * `{{ range service "authz" }}…{{ .Address }}…{{ .Port }}…{{ else }}…{{ end }}`, with the
 * given passing instances, and `{{ env "NAME" | toJSON }}` from `env` (the task's env, which
 * Nomad hands the template: client/allocrunner/taskrunner/template/template.go, `templateRunner`
 * sets runner.Env; consul-template's toJSON is json.Marshal, as JSON.stringify for a string).
 * Any other action throws, so the template cannot grow one this test would not render.
 */
function renderEnvoyTemplate(template: string, instances: ConsulInstance[], env: Record<string, string> = ENVOY_TASK_ENV): string {
  const range = /\{\{ range service "authz" \}\}([\s\S]*?)\{\{ else \}\}([\s\S]*?)\{\{ end \}\}/;
  const match = range.exec(template);
  assert.ok(match, 'the template ranges over service "authz" with an else branch');
  const [, body = '', empty = ''] = match;
  const each = (instance: ConsulInstance) =>
    body.replace(/\{\{ \.(Address|Port) \}\}/g, (_, field: 'Address' | 'Port') => String(instance[field]));
  const rendered = template
    .replace(range, instances.length > 0 ? instances.map(each).join('') : empty)
    .replace(/\{\{ env "([A-Z_]+)" \| toJSON \}\}/g, (_, name: string) => JSON.stringify(env[name] ?? ''));
  assert.ok(!rendered.includes('{{'), `the template has an action this test does not render: ${rendered.slice(rendered.indexOf('{{'), rendered.indexOf('{{') + 60)}`);
  return rendered;
}

/** envoy/envoy.yaml as parsed, with cluster authz's endpoints set to `instances`. */
function envoyYamlWithAuthz(instances: ConsulInstance[]): Body {
  const config = parseYaml(readFileSync(ENVOY_YAML, 'utf8')) as Body;
  const authz = (config.static_resources.clusters as Body[]).find((cluster) => cluster.name === 'authz');
  assert.ok(authz, 'envoy.yaml has cluster authz');
  authz.load_assignment.endpoints[0].lb_endpoints = instances.map((instance) => ({
    endpoint: { address: { socket_address: { address: instance.Address, port_value: instance.Port } } },
  }));
  return config;
}

/** The Envoy task's env as rendered in these tests: the console origin envoy/envoy.yaml holds. */
const ENVOY_TASK_ENV = { CONSOLE_ORIGIN: 'http://127.0.0.1:7070' };

const AUTHZ_INSTANCES: ConsulInstance[] = [
  { Address: '10.0.3.11', Port: 27181 },
  { Address: '10.0.3.12', Port: 21904 },
];

describe('nomad-jobs/*.hcl', function () {
  it('holds the platform jobs and the control API\'s ACL policies', function () {
    for (const file of ['control.nomad.hcl', 'authz.nomad.hcl', 'envoy.nomad.hcl', 'control-acl-policy.hcl', 'control-consul-policy.hcl', 'edge-consul-policy.hcl']) {
      assert.ok(hclFiles().includes(file), `nomad-jobs/${file} is missing`);
    }
  });

  it('every file parses as HCL and names only blocks and attributes Nomad (or Consul) has', async function () {
    for (const file of hclFiles()) {
      const issues = checkHcl(specFor(file), await parseFile(file));
      assert.deepEqual(issues, [], `nomad-jobs/${file}:\n${describeIssues(issues)}`);
    }
  });

  describe('the checker can fail', function () {
    it('rejects a misspelled attribute, an attribute written as a block, an unknown docker option and an unknown capability', async function () {
      const control = readText('control.nomad.hcl');
      const cases: [string, string, string, string][] = [
        ['control.nomad.hcl', 'healthy_deadline  =', 'healthy_dedline  =', 'unknown attribute "healthy_dedline"'],
        ['control.nomad.hcl', 'pids_limit = 512', 'pid_limit = 512', 'unknown attribute "pid_limit"'],
        ['control.nomad.hcl', 'count = 2', 'count {\n  n = 2\n}', '"count" is an attribute'],
        ['control-acl-policy.hcl', '"scale-job",', '"scale-jobs",', '"scale-jobs" is not one of'],
        ['control-consul-policy.hcl', 'policy = "read"', 'policy = "reed"', '"reed" is not one of'],
      ];
      for (const [file, from, to, expected] of cases) {
        const text = file === 'control.nomad.hcl' ? control : readText(file);
        assert.ok(text.includes(from), `${file} contains ${from}`);
        const issues = checkHcl(specFor(file), await parseFile(file, text.replace(from, to)));
        assert.ok(issues.some((issue) => issue.message.includes(expected)), `${file} with "${to}": expected an issue "${expected}", got:\n${describeIssues(issues)}`);
      }
    });

    it('rejects HCL that does not parse', async function () {
      await assert.rejects(parseFile('control.nomad.hcl', readText('control.nomad.hcl').replace('count = 2', 'count = ')));
    });
  });

  describe('control.nomad.hcl', function () {
    let control: ParsedJob;
    before(async function () {
      control = await readJob('control.nomad.hcl');
    });

    it('passes only settings loadConfig reads with ORCHESTRATOR=nomad', function () {
      const { read } = settingsReadBy(loadConfig, { ORCHESTRATOR: 'nomad' });
      const { plain, templated } = envNames(control.task);
      for (const name of [...plain, ...templated]) {
        assert.ok(read.has(name), `${name} is passed to the control API but loadConfig does not read it (renamed or misspelled?)`);
      }
      assert.equal(control.task.env[0].ORCHESTRATOR, 'nomad');
    });

    it('gets its secrets from the Variable nomad/jobs/platform-control through an env template, never plain env', function () {
      const { plain, templated } = envNames(control.task);
      for (const secret of SECRET_SETTINGS) {
        assert.ok(!plain.includes(secret), `${secret} is plain job env`);
        assert.ok(templated.includes(secret), `${secret} does not come from the template`);
      }
      const template = (control.task.template as Body[]).find((t) => t.env === true)!;
      assert.match(template.data, /\{\{ with nomadVar "nomad\/jobs\/platform-control" -?\}\}/);
      assert.match(template.destination, /^secrets\//);
      // A job's workload identity reads nomad/jobs/<job id> without any policy.
      assert.equal(control.id, 'platform-control');
    });

    it('runs two copies (the loops take a Postgres advisory lock per pass) and checks /healthz, which the control API serves', async function () {
      assert.equal(control.group.count, 2);
      const service = (control.group.service as Body[])[0]!;
      const check = (service.check as Body[])[0]!;
      assert.equal(check.type, 'http');
      // Host networking: the control API listens on the node's dynamic port for the service's label.
      assert.equal(control.task.config[0].network_mode, 'host');
      assert.equal(control.task.env[0].CONTROL_PORT, `\${NOMAD_PORT_${service.port}}`);
      assert.equal(control.task.env[0].CONTROL_HOST, `\${NOMAD_IP_${service.port}}`);

      let healthy = true;
      const app = createApp({
        routes: [],
        authenticate: async () => {
          throw new Error('no route needs a principal here');
        },
        checkReadiness: async () => ({ ready: healthy, dependencies: { postgres: healthy ? 'ok' : 'unavailable' } }),
        logger: pino({ level: 'silent' }),
        trustProxy: false,
      });
      const server = await listen(createServer(app.callback()));
      try {
        const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}${check.path}`;
        assert.equal((await fetch(url)).status, 200);
        healthy = false;
        assert.notEqual((await fetch(url)).status, 200, 'the check path must fail when a dependency is down');
      } finally {
        server.close();
      }
    });
  });

  it('control reaches the node’s Consul agent on loopback, where a default agent listens (client_addr 127.0.0.1)', async function () {
    const job = await parseFile('control.nomad.hcl');
    const task = job.job['platform-control'][0].group.control[0].task.control[0];
    assert.equal(task.config[0].network_mode, 'host', 'a bridge network cannot reach the node’s 127.0.0.1');
    assert.equal(task.env[0].CONSUL_HTTP_ADDR, 'http://127.0.0.1:8500');
  });

  describe('authz.nomad.hcl', function () {
    let authz: ParsedJob;
    before(async function () {
      authz = await readJob('authz.nomad.hcl');
    });

    it('runs several copies as the Consul service authz, with settings loadAuthzConfig reads and REDIS_URL from a Variable', function () {
      assert.ok(authz.group.count >= 2, 'more than one authz');
      assert.ok((authz.group.service as Body[]).some((s) => s.name === 'authz' && s.provider === 'consul'));
      const read = new Set<string>();
      const env = new Proxy({} as Record<string, string | undefined>, { get: (_, name) => (typeof name === 'string' && read.add(name), undefined) });
      assert.throws(() => loadAuthzConfig(env));
      const { plain, templated } = envNames(authz.task);
      for (const name of [...plain, ...templated]) assert.ok(read.has(name), `${name} is passed to authz but loadAuthzConfig does not read it`);
      assert.ok(!plain.includes('REDIS_URL') && templated.includes('REDIS_URL'));
      const portOf = (service: string) => portTo(authz.group, (authz.group.service as Body[]).find((s) => s.name === service)!.port);
      assert.equal(String(portOf('authz')), authz.task.env[0].AUTHZ_GRPC_PORT);
      assert.equal(String(portOf('authz-metrics')), authz.task.env[0].AUTHZ_METRICS_PORT);
    });

    it('health-checks the gRPC service name authz serves: a real authz answers SERVING for it', async function () {
      const service = (authz.group.service as Body[]).find((s) => s.name === 'authz')!;
      const check = (service.check as Body[])[0]!;
      assert.equal(check.type, 'grpc');
      const redis = connectTestRedis();
      const running = await startTestAuthz({ redis, clock: systemClock, agentDomain: 'nomad-jobs.test' });
      try {
        assert.deepEqual(await running.client.healthCheck(check.grpc_service), { status: 'SERVING' });
      } finally {
        await running.close();
        redis.disconnect();
      }
    });
  });

  it('every platform task drops every capability and cannot gain privileges', async function () {
    for (const file of ['control.nomad.hcl', 'authz.nomad.hcl', 'envoy.nomad.hcl']) {
      const [config] = (await readJob(file)).task.config as Body[];
      assert.deepEqual(config!.cap_drop, ['ALL'], file);
      assert.equal(config!.cap_add, undefined, file);
      assert.deepEqual(config!.security_opt, ['no-new-privileges'], file);
    }
  });

  it('control and authz run only on platform nodes, away from the agents\' firewalled bridge', async function () {
    for (const file of ['control.nomad.hcl', 'authz.nomad.hcl']) {
      const { job } = await readJob(file);
      assert.deepEqual(job.constraint, [{ attribute: '${node.class}', value: 'platform' }], file);
    }
  });

  it("calls only functions Nomad's job language has", async function () {
    const planted = functionCalls(await parseFile('planted.nomad.hcl', 'variable "x" {\n  type = string\n  validation {\n    condition = can(regex("^a$", var.x))\n    error_message = "x"\n  }\n}\n'));
    assert.deepEqual(planted.map((call) => call.name), ['can', 'regex'], 'the scan finds calls inside a validation');
    for (const file of hclFiles().filter((name) => name.endsWith('.nomad.hcl'))) {
      const unknown = functionCalls(await parseFile(file)).filter((call) => !NOMAD_FUNCTIONS.has(call.name));
      assert.deepEqual(unknown, [], `${file} calls a function Nomad does not define`);
    }
  });

  describe('envoy.nomad.hcl', function () {
    let envoy: ParsedJob;
    let template: string;
    before(async function () {
      envoy = await readJob('envoy.nomad.hcl');
      template = (envoy.task.template as Body[]).find((t) => t.destination === 'local/envoy.yaml')!.data;
    });

    it('is a system job on edge nodes (node.class == "edge") with Envoy on the host network', function () {
      assert.equal(envoy.job.type, 'system');
      assert.deepEqual(envoy.job.constraint, [{ attribute: '${node.class}', value: 'edge' }]);
      assert.equal(envoy.task.config[0].network_mode, 'host');
      assert.ok(envoy.task.config[0].args.includes('/local/envoy.yaml'));
    });

    it('renders envoy/envoy.yaml exactly, with authz\'s endpoints from Consul', function () {
      assert.ok(!/\$\{|%\{/.test(template), 'HCL would interpolate ${ or %{ inside the template');
      for (const instances of [AUTHZ_INSTANCES, AUTHZ_INSTANCES.slice(0, 1), []]) {
        const rendered = parseYaml(renderEnvoyTemplate(template, instances));
        assert.deepEqual(rendered, envoyYamlWithAuthz(instances), `rendered with ${instances.length} authz instance(s)`);
      }
    });

    it("fills the CORS policy's allowed origin from the job's console_origin, as a JSON string", function () {
      assert.equal(envoy.task.env[0].CONSOLE_ORIGIN, '${var.console_origin}');
      const origin = 'https://platform.example.com:8443';
      const rendered = parseYaml(renderEnvoyTemplate(template, AUTHZ_INSTANCES, { CONSOLE_ORIGIN: origin }));
      const host = rendered.static_resources.listeners[0].filter_chains[0].filters[0].typed_config.route_config.virtual_hosts[0];
      assert.deepEqual(host.typed_per_filter_config['envoy.filters.http.cors'].allow_origin_string_match, [{ exact: origin }]);
    });

    it('renders a bootstrap Envoy accepts (v3 protos, no unknown field)', function () {
      const schema = new EnvoySchema(loadEnvoyRoot());
      const issues = schema.check('envoy.config.bootstrap.v3.Bootstrap', parseYaml(renderEnvoyTemplate(template, AUTHZ_INSTANCES)));
      assert.deepEqual(issues, []);
    });

    it('notices drift: a template edited apart from envoy.yaml no longer matches', function () {
      assert.ok(template.includes('timeout: 0.25s'));
      const drifted = parseYaml(renderEnvoyTemplate(template.replace('timeout: 0.25s', 'timeout: 0.5s'), AUTHZ_INSTANCES));
      assert.notDeepStrictEqual(drifted, envoyYamlWithAuthz(AUTHZ_INSTANCES));
    });
  });

  describe('Prometheus targets for consul_sd', function () {
    /** Services a consul_sd job keeps: tagged "prometheus", scraped at their metrics_path meta. */
    const scrapeTargets = (job: ParsedJob): Body[] => ((job.group.service ?? []) as Body[]).filter((s) => (s.tags as string[]).includes('prometheus'));
    const metricsPath = (service: Body): string => service.meta?.[0]?.metrics_path;

    it('control: platform-control-metrics on the port CONTROL_METRICS_PORT is set to, at the path the metrics server answers', async function () {
      const control = await readJob('control.nomad.hcl');
      const [target, ...others] = scrapeTargets(control);
      assert.equal(others.length, 0);
      assert.equal(target!.name, 'platform-control-metrics');
      assert.equal(control.task.env[0].CONTROL_METRICS_PORT, `\${NOMAD_PORT_${target!.port}}`);
      assert.notEqual(target!.port, (control.group.service as Body[]).find((s) => s.name === 'platform-control')!.port);
      const server = await startMetricsServer(new Registry(), 0, '127.0.0.1');
      try {
        assert.equal((await fetch(`http://127.0.0.1:${server.port}${metricsPath(target!)}`)).status, 200);
      } finally {
        await server.close();
      }
    });

    it('authz: authz-metrics, at the path its metrics port answers', async function () {
      const [target, ...others] = scrapeTargets(await readJob('authz.nomad.hcl'));
      assert.equal(others.length, 0);
      assert.equal(target!.name, 'authz-metrics');
      const redis = connectTestRedis();
      const running = await startTestAuthz({ redis, clock: systemClock, agentDomain: 'nomad-jobs-metrics.test' });
      try {
        const response = await fetch(`http://127.0.0.1:${running.authz.metricsPort}${metricsPath(target!)}`);
        assert.equal(response.status, 200);
        assert.match(await response.text(), /^# TYPE authz_checks_total counter$/m);
      } finally {
        await running.close();
        redis.disconnect();
      }
    });

    it("Envoy: platform-edge-metrics on the static port of envoy.yaml's prometheus_stats listener, whose one proxied path is the meta's", async function () {
      const envoy = await readJob('envoy.nomad.hcl');
      const [target, ...others] = scrapeTargets(envoy);
      assert.equal(others.length, 0);
      assert.equal(target!.name, 'platform-edge-metrics');
      const config = parseYaml(readFileSync(ENVOY_YAML, 'utf8')) as Body;
      const listener = (config.static_resources.listeners as Body[]).find((l) => l.name === 'prometheus_stats')!;
      const port = (envoy.group.network[0].port as Record<string, Body[]>)[target!.port]![0]!;
      assert.equal(port.static, listener.address.socket_address.port_value);
      const routes = listener.filter_chains[0].filters[0].typed_config.route_config.virtual_hosts[0].routes as Body[];
      const proxied = routes.filter((r) => r.route);
      assert.deepEqual(proxied.map((r) => [r.match.path, r.route.cluster]), [[metricsPath(target!), 'envoy_admin']]);
    });
  });

  describe('the control API\'s ACL policies', function () {
    it('Nomad: capabilities only, in one namespace, variables only under nomad/jobs/agent-*', async function () {
      const policy = await parseFile('control-acl-policy.hcl');
      const namespaces = Object.entries(policy.namespace as Record<string, Body[]>);
      assert.equal(namespaces.length, 1);
      const [name, [rule]] = namespaces[0]! as [string, Body[]];
      assert.ok(rule);
      assert.notEqual(name, '*', 'never every namespace');
      assert.equal(rule.policy, undefined, 'no coarse policy: it grants more than the driver uses');
      assert.deepEqual([...rule.capabilities].sort(), ['list-jobs', 'read-job', 'read-logs', 'scale-job', 'submit-job']);
      assert.deepEqual(Object.keys(rule.variables[0].path), ['nomad/jobs/agent-*']);
      for (const other of ['node', 'agent', 'operator', 'quota', 'plugin', 'host_volume']) assert.equal(policy[other], undefined, `no ${other} rule`);
      assert.deepEqual(policy.node_pool, { agents: [{ policy: 'read' }] }, 'reads the agents’ node pool, nothing more');
    });

    it('Consul: read only', async function () {
      const rules = await parseFile('control-consul-policy.hcl');
      const dispositions = Object.values(rules).flatMap((byLabel) => Object.values(byLabel as Record<string, Body[]>).flatMap((bodies) => bodies.map((b) => b.policy)));
      assert.ok(dispositions.length > 0);
      assert.deepEqual([...new Set(dispositions)], ['read']);
      assert.deepEqual(Object.keys(rules.service_prefix), ['agent-']);
    });
  });

  describe('the Envoy task’s Consul identity', function () {
    it('has a consul block, without which Nomad gives the task no Consul token and the template sees no authz', async function () {
      const job = await parseFile('envoy.nomad.hcl');
      const task = job.job['platform-edge'][0].group.edge[0].task.envoy[0];
      assert.ok(task.consul || job.job['platform-edge'][0].group.edge[0].consul, 'a consul block on the task or its group');
      assert.match(JSON.stringify(task.template), /service \\"authz\\"/, 'the template reads service authz');
    });

    it('its policy reads service authz and the nodes, nothing else', async function () {
      const rules = await parseFile('edge-consul-policy.hcl');
      assert.deepEqual(Object.keys(rules).sort(), ['node_prefix', 'service']);
      assert.deepEqual(rules.service, { authz: [{ policy: 'read' }] });
      assert.deepEqual(rules.node_prefix, { '': [{ policy: 'read' }] });
    });
  });

  describe('the platform image and the probes', function () {
    /** The program each platform job runs from the platform image. */
    const PROGRAMS = { 'control.nomad.hcl': 'control', 'authz.nomad.hcl': 'authz' } as const;

    /** Every service of the job's group and task, each with its checks. */
    const servicesOf = ({ group, task }: ParsedJob): Body[] => [...((group.service ?? []) as Body[]), ...((task.service ?? []) as Body[])];
    const checksOf = (service: Body): Body[] => (service.check ?? []) as Body[];

    it('control and authz run the platform image\'s compiled JavaScript, never tsx', async function () {
      const buildScript = readFileSync(new URL('../scripts/build-platform-image.sh', import.meta.url), 'utf8');
      const tagged = /PLATFORM_IMAGE="\$\{PLATFORM_IMAGE:-([^}]+)\}"/.exec(buildScript)?.[1];
      assert.equal(tagged, 'localhost/agent-platform:latest');
      const build = JSON.parse(readFileSync(new URL('../tsconfig.build.json', import.meta.url), 'utf8'));
      assert.deepEqual([build.compilerOptions.rootDir, build.compilerOptions.outDir], ['.', 'dist'], 'dist/ mirrors the source tree');
      for (const [file, program] of Object.entries(PROGRAMS)) {
        assert.equal((await parseFile(file)).variable.image[0].default, tagged, `${file}: the image variable defaults to what the build script tags`);
        const config = (await readJob(file)).task.config[0];
        assert.equal(config.image, '${var.image}', file);
        assert.equal(config.command, 'node', file);
        assert.deepEqual(config.args, [`dist/${program}/main.js`], file);
        assert.ok(build.include.includes(program) && existsSync(new URL(`../${program}/main.ts`, import.meta.url)), `${file}: dist/${program}/main.js is compiled from ${program}/main.ts`);
        assert.ok(!JSON.stringify(config).includes('tsx'), `${file} still runs tsx`);
      }
    });

    it('restarts hang on liveness checks only: check_restart sits on /livez checks, never on a service or a readiness check', async function () {
      for (const file of ['control.nomad.hcl', 'authz.nomad.hcl', 'envoy.nomad.hcl']) {
        for (const service of servicesOf(await readJob(file))) {
          // On a service, check_restart would apply to every check of it (job-specification/check_restart).
          assert.equal(service.check_restart, undefined, `${file}: service ${service.name} has check_restart`);
          for (const check of checksOf(service).filter((c) => c.check_restart)) {
            assert.deepEqual([check.type, check.path], ['http', '/livez'], `${file}: check "${check.name}" restarts the task but is not a liveness check`);
          }
        }
      }
      for (const file of Object.keys(PROGRAMS)) {
        const checks = servicesOf(await readJob(file)).flatMap(checksOf);
        assert.ok(checks.some((c) => c.check_restart), `${file}: a wedged process is never restarted`);
      }
    });

    it('control: with Postgres down, its restarting check passes and its routing check fails', async function () {
      const { group } = await readJob('control.nomad.hcl');
      const service = (group.service as Body[]).find((s) => s.name === 'platform-control')!;
      const app = createApp({
        routes: [],
        authenticate: async () => {
          throw new Error('no route needs a principal here');
        },
        checkReadiness: async () => ({ ready: false, dependencies: { postgres: 'unavailable', redis: 'ok' } }),
        logger: pino({ level: 'silent' }),
        trustProxy: false,
      });
      const server = await listen(createServer(app.callback()));
      try {
        const statusOf = async (check: Body) => (await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}${check.path}`)).status;
        const checks = checksOf(service);
        assert.ok(checks.some((c) => !c.check_restart), 'a readiness check gates routing');
        for (const check of checks) {
          assert.equal(check.type, 'http');
          assert.equal(await statusOf(check), check.check_restart ? 200 : 503, `check "${check.name}" (${check.path})`);
        }
      } finally {
        server.close();
      }
    });

    it('authz: with Redis down, its restarting check passes and its routing check (gRPC health) fails', async function () {
      const { group } = await readJob('authz.nomad.hcl');
      const deadRedis = new Redis(await freePort(), '127.0.0.1', { maxRetriesPerRequest: 1, retryStrategy: () => 200, lazyConnect: true });
      deadRedis.on('error', () => undefined);
      const running = await startTestAuthz({ redis: deadRedis, clock: systemClock, agentDomain: 'nomad-jobs-probes.test' });
      try {
        const portOf: Record<string, number> = { grpc: running.authz.grpcPort, metrics: running.authz.metricsPort };
        const routed = (group.service as Body[]).find((s) => s.name === 'authz')!;
        for (const check of checksOf(routed)) {
          assert.equal(check.check_restart, undefined);
          assert.equal(check.type, 'grpc');
          assert.deepEqual(await running.client.healthCheck(check.grpc_service), { status: 'NOT_SERVING' });
        }
        for (const service of group.service as Body[]) {
          for (const check of checksOf(service).filter((c) => c.check_restart)) {
            const port = portOf[check.port ?? service.port];
            assert.equal((await fetch(`http://127.0.0.1:${port}${check.path}`)).status, 200, `check "${check.name}" (${check.path})`);
          }
        }
      } finally {
        await running.close();
        deadRedis.disconnect();
      }
    });
  });
});

function listen(server: Server): Promise<Server> {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}
