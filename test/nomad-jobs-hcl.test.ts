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
import { loadConfig } from '../control/config/config.js';
import { ConfigError } from '../contract/settings-reader.js';
import { createApp } from '../control/http/app.js';
import { startMetricsServer } from '../control/metrics/server.js';
import { loadEnvoyRoot } from '../proto/load.js';
import { freePort } from '../scripts/lib/local-services.js';
import { connectTestRedis, startTestAuthz } from './support/edge-authz.js';
import { isUnixSocket } from '../contract/grpc-target.js';
import { EnvoySchema } from './support/envoy-schema.js';
import { functionCalls, NOMAD_FUNCTIONS } from './support/nomad-functions.js';
import {
  ALLOC_SOCKET,
  ALLOC_XDS_SOCKET,
  AUTHZ_TASK_ENV,
  ENVOY_YAML_DESTINATION,
  TLS_LISTENER_DESTINATION,
  authzAddressOf,
  envoyYamlOnNomad,
  inDocker,
  renderEnvTemplate,
  templateAt,
} from './support/nomad-envoy-task.js';
import { envoyLoadProblems } from './support/envoy-rules.js';
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
 * program actually reads, and the envoy.yaml template (the authz task's, in the allocation's
 * shared directory, which Envoy runs and authz's xDS server reads) is envoy/envoy.yaml but for
 * the paths of authz's sockets (in the allocation's directory) and the console's origin
 * (test/nomad-edge-tls.test.ts has the rest of HTTPS, tls-listener.yaml's copy included).
 */

const JOBS_DIR = new URL('../nomad-jobs/', import.meta.url);
const ENVOY_YAML = new URL('../envoy/envoy.yaml', import.meta.url);
const ENVOY_TEMPLATE = ENVOY_YAML_DESTINATION;

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

/** The file's one job and group, and its one task or the task named `taskName`. */
async function readJob(file: string, taskName?: string): Promise<ParsedJob> {
  const { label: id, body: job } = only(await parseFile(file), 'job');
  const group = only(job, 'group').body;
  if (taskName === undefined) return { id, job, group, task: only(group, 'task').body };
  const task = (group.task as Record<string, Body[]> | undefined)?.[taskName]?.[0];
  assert.ok(task, `${file}: no task "${taskName}"`);
  return { id, job, group, task };
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

/** `value` of a job's env as Nomad interpolates it in a docker task: `${NOMAD_ALLOC_DIR}` is /alloc. */
const interpolated = inDocker;

/** The names a task's templates read from its environment (`{{ env "NAME" }}`). */
const templateEnvNames = (task: Body): Set<string> =>
  new Set(((task.template ?? []) as Body[]).flatMap((template) => [...String(template.data).matchAll(/\{\{ env "([A-Z_]+)"/g)].map((match) => match[1]!)));

describe('nomad-jobs/*.hcl', function () {
  it('holds the platform jobs and the control API\'s ACL policies', function () {
    for (const file of ['control.nomad.hcl', 'envoy.nomad.hcl', 'control-acl-policy.hcl', 'control-consul-policy.hcl']) {
      assert.ok(hclFiles().includes(file), `nomad-jobs/${file} is missing`);
    }
    // authz runs in Envoy's group (envoy.nomad.hcl): no job, Consul service or Consul policy of its own.
    for (const file of ['authz.nomad.hcl', 'edge-consul-policy.hcl']) assert.ok(!hclFiles().includes(file), `nomad-jobs/${file} is back`);
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

  describe("envoy.nomad.hcl: authz, Envoy's sidecar", function () {
    let authz: ParsedJob;
    let envoy: ParsedJob;
    before(async function () {
      authz = await readJob('envoy.nomad.hcl', 'authz');
      envoy = await readJob('envoy.nomad.hcl', 'envoy');
    });

    it("runs in Envoy's group, one beside each Envoy (a system job's group, one a node), started before Envoy and stopped after it", function () {
      assert.deepEqual(Object.keys(authz.group.task).sort(), ['authz', 'envoy']);
      assert.equal(authz.job.type, 'system');
      assert.equal(authz.group.count, undefined, 'one group a node');
      // A prestart sidecar: running before the main tasks start, killed after them
      // (tasklifecycle/coordinator.go `isPrestartDone`; alloc_runner.go `killTasks`).
      assert.deepEqual(authz.task.lifecycle, [{ hook: 'prestart', sidecar: true }]);
      assert.equal(envoy.task.lifecycle, undefined, 'Envoy is the main task');
    });

    it('passes settings loadAuthzConfig reads and accepts, REDIS_URL from the Variable only its task reads', async function () {
      const read = new Set<string>();
      const env = new Proxy({} as Record<string, string | undefined>, { get: (_, name) => (typeof name === 'string' && read.add(name), undefined) });
      assert.throws(() => loadAuthzConfig(env));
      const { plain, templated } = envNames(authz.task);
      // CONSOLE_ORIGIN is for the envoy.yaml template the task renders, and for nothing else.
      const forTemplates = templateEnvNames(authz.task);
      for (const name of [...plain, ...templated]) assert.ok(read.has(name) || forTemplates.has(name), `${name} is passed to authz but neither loadAuthzConfig nor its templates read it`);
      assert.deepEqual(plain.filter((name) => !read.has(name)), ['CONSOLE_ORIGIN']);
      assert.ok(!plain.includes('REDIS_URL') && templated.includes('REDIS_URL'));
      const template = (authz.task.template as Body[]).find((t) => t.env === true)!;
      // nomad/jobs/<job>/<group>/<task>: this task's workload identity reads it without a policy (acl/acl.go), Envoy's does not.
      assert.match(template.data, /\{\{ with nomadVar "nomad\/jobs\/platform-edge\/edge\/authz" -?\}\}/);
      assert.match(template.destination, /^secrets\//);
      assert.equal(envNames(envoy.task).templated.length, 0, 'Envoy gets no secret');
      // The env as the task gets it: job variables at their defaults, NOMAD_ALLOC_DIR at /alloc.
      const variables = (await parseFile('envoy.nomad.hcl')).variable as Record<string, Body[]>;
      const value = (raw: unknown) => interpolated(String(raw)).replace(/^\$\{var\.([a-z_]+)\}$/, (_, name: string) => String(variables[name]![0]!.default));
      const taskEnv = Object.fromEntries(Object.entries(authz.task.env[0] as Body).map(([name, raw]) => [name, value(raw)]));
      const config = loadAuthzConfig({ ...taskEnv, REDIS_URL: 'redis://redis.example:6379' });
      assert.deepEqual(config.grpcListen, { path: ALLOC_SOCKET });
      assert.equal(config.metricsPort, portTo(authz.group, 'authz_metrics'));
      // authz's xDS server reads the very files its templates render, as the container sees them.
      assert.deepEqual(config.xds, {
        socketPath: ALLOC_XDS_SOCKET,
        envoyConfigFile: inDocker(templateAt(authz.task, ENVOY_YAML_DESTINATION).destination),
        tlsListenerFile: inDocker(templateAt(authz.task, TLS_LISTENER_DESTINATION).destination),
      });
    });

    it("renders envoy.yaml and tls-listener.yaml in the allocation's shared directory, where Nomad lets a template write, for Envoy and authz alike", function () {
      for (const destination of [ENVOY_YAML_DESTINATION, TLS_LISTENER_DESTINATION]) {
        const template = templateAt(authz.task, destination);
        assert.match(template.destination, /^\$\{NOMAD_ALLOC_DIR\}\//, "the allocation's shared directory, not the task's");
        assert.equal(template.change_mode, 'noop', 'rendered once: a change would restart nothing');
        assert.equal(template.env, undefined);
        // Envoy's templates are the TLS files alone: it renders nothing authz reads.
        assert.ok(!(envoy.task.template as Body[]).some((t) => t.destination === destination));
      }
      // Envoy runs the envoy.yaml authz's template renders, by its path in Envoy's container.
      assert.match(envoy.task.config[0].args, new RegExp(`\\["-c", "${inDocker(ENVOY_YAML_DESTINATION)}", `));
    });

    it("is a prestart sidecar, so its templates are rendered before Envoy's task starts: Envoy finds its bootstrap there", function () {
      assert.deepEqual(authz.task.lifecycle, [{ hook: 'prestart', sidecar: true }]);
      assert.equal(envoy.task.template.length, 3, "Envoy's own templates: sds.yaml, tls.crt, tls.key");
    });

    it("puts authz's sockets in the allocation's directory, and Envoy's authz and authz_xds clusters point at the same paths", function () {
      assert.equal(authz.task.env[0].AUTHZ_GRPC_SOCKET, '${NOMAD_ALLOC_DIR}/tmp/authz.sock');
      assert.equal(authz.task.env[0].AUTHZ_XDS_SOCKET, '${NOMAD_ALLOC_DIR}/tmp/authz-xds.sock');
      const template = templateAt(authz.task, ENVOY_TEMPLATE).data;
      assert.match(template, /pipe: \{ path: \{\{ env "NOMAD_ALLOC_DIR" \}\}\/tmp\/authz\.sock \}/);
      assert.match(template, /pipe: \{ path: \{\{ env "NOMAD_ALLOC_DIR" \}\}\/tmp\/authz-xds\.sock \}/);
      const rendered = parseYaml(renderEnvTemplate(template, AUTHZ_TASK_ENV)) as Body;
      assert.deepEqual(authzAddressOf(rendered), { pipe: { path: interpolated(authz.task.env[0].AUTHZ_GRPC_SOCKET) } });
      assert.deepEqual(authzAddressOf(rendered, 'authz_xds'), { pipe: { path: interpolated(authz.task.env[0].AUTHZ_XDS_SOCKET) } });
    });

    it("opens no network port for authz's gRPC: its task publishes the metrics port alone, and no service or check names gRPC", function () {
      const ports = Object.keys(authz.group.network[0].port).sort();
      assert.deepEqual(ports, ['authz_metrics', 'edge', 'edge_tls', 'stats']);
      assert.deepEqual(authz.task.config[0].ports, ['authz_metrics']);
      assert.equal(String(portTo(authz.group, 'authz_metrics')), authz.task.env[0].AUTHZ_METRICS_PORT);
      assert.equal(authz.task.env[0].AUTHZ_GRPC_LISTEN, undefined);
      const services = [...((authz.group.service ?? []) as Body[]), ...((authz.task.service ?? []) as Body[])];
      assert.deepEqual(services.map((service) => service.name).sort(), ['authz-metrics', 'platform-edge', 'platform-edge-metrics', 'platform-edge-tls']);
      for (const service of services) {
        assert.ok(!(service.check ?? []).some((check: Body) => check.type === 'grpc'), `service ${service.name} has a gRPC check`);
      }
    });

    it("health-checks, from Envoy, the gRPC service name authz serves: a real authz answers SERVING for it on its socket", async function () {
      const template = templateAt(authz.task, ENVOY_TEMPLATE).data;
      const cluster = (parseYaml(renderEnvTemplate(template, AUTHZ_TASK_ENV)).static_resources.clusters as Body[]).find((c) => c.name === 'authz')!;
      const [check] = cluster.health_checks as Body[];
      const redis = connectTestRedis();
      const running = await startTestAuthz({ redis, clock: systemClock, agentDomain: 'nomad-jobs.test' });
      try {
        assert.ok(isUnixSocket(running.authz.grpcTarget));
        assert.deepEqual(await running.client.healthCheck(check!.grpc_health_check.service_name ?? ''), { status: 'SERVING' });
      } finally {
        await running.close();
        redis.disconnect();
      }
    });
  });

  it('every platform task drops every capability and cannot gain privileges', async function () {
    for (const [file, task] of [['control.nomad.hcl'], ['envoy.nomad.hcl', 'authz'], ['envoy.nomad.hcl', 'envoy']] as const) {
      const [config] = (await readJob(file, task)).task.config as Body[];
      assert.deepEqual(config!.cap_drop, ['ALL'], `${file} ${task ?? ''}`);
      assert.equal(config!.cap_add, undefined, `${file} ${task ?? ''}`);
      assert.deepEqual(config!.security_opt, ['no-new-privileges'], `${file} ${task ?? ''}`);
    }
  });

  describe('images', function () {
    /** Every docker task of every job file, with the job's variables. */
    async function dockerTasks(): Promise<{ file: string; task: string; image: string; variables: Record<string, Body[]> }[]> {
      const found = [];
      for (const file of hclFiles().filter((name) => name.endsWith('.nomad.hcl'))) {
        const parsed = await parseFile(file);
        const { body: job } = only(parsed, 'job');
        for (const groups of Object.values(job.group as Record<string, Body[]>)) {
          for (const [task, [body]] of Object.entries(groups[0]!.task as Record<string, Body[]>)) {
            if (body!.driver === 'docker') found.push({ file, task, image: body!.config[0].image as string, variables: parsed.variable });
          }
        }
      }
      return found;
    }

    it('names every image by a variable without a default: the operator passes the references `npm run images -- push` prints', async function () {
      const tasks = await dockerTasks();
      assert.deepEqual(tasks.map(({ file, task }) => `${file} ${task}`), ['control.nomad.hcl control', 'envoy.nomad.hcl authz', 'envoy.nomad.hcl envoy']);
      for (const { file, task, image, variables } of tasks) {
        const name = /^\$\{var\.([a-z_]+)\}$/.exec(image)?.[1];
        assert.ok(name && variables[name], `${file} ${task}: the image is not a variable (${image})`);
        // A default would be a mutable name: "latest" is pulled at every start, and another tag is whatever copy a node holds.
        assert.equal(variables[name][0]!.default, undefined, `${file}: variable ${name} has a default`);
      }
    });

    it('hands runtime_image, as required, to the control API as RUNTIME_IMAGE, which it refuses untagged or "latest" with the Nomad driver', async function () {
      const control = await readJob('control.nomad.hcl');
      assert.equal(control.task.env[0].RUNTIME_IMAGE, '${var.runtime_image}');
      assert.equal((await parseFile('control.nomad.hcl')).variable.runtime_image[0].default, undefined);
      for (const image of ['registry.example.com/platform/agent-runtime', 'registry.example.com/platform/agent-runtime:latest']) {
        const { problems } = settingsReadBy(loadConfig, { ORCHESTRATOR: 'nomad', RUNTIME_IMAGE: image });
        assert.ok(problems.some((problem) => problem.startsWith(`RUNTIME_IMAGE: ${image} is `)), `${image} accepted`);
      }
    });
  });

  it('control runs only on platform nodes, authz beside Envoy on edge nodes: neither on the agents\' firewalled bridge', async function () {
    assert.deepEqual((await readJob('control.nomad.hcl')).job.constraint, [{ attribute: '${node.class}', value: 'platform' }]);
    assert.deepEqual((await readJob('envoy.nomad.hcl', 'authz')).job.constraint, [{ attribute: '${node.class}', value: 'edge' }]);
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
    let authz: ParsedJob;
    let template: string;
    before(async function () {
      envoy = await readJob('envoy.nomad.hcl', 'envoy');
      authz = await readJob('envoy.nomad.hcl', 'authz');
      template = templateAt(authz.task, ENVOY_TEMPLATE).data;
    });

    it('is a system job on edge nodes (node.class == "edge") with Envoy on the host network, running the envoy.yaml in the allocation', function () {
      assert.equal(envoy.job.type, 'system');
      assert.deepEqual(envoy.job.constraint, [{ attribute: '${node.class}', value: 'edge' }]);
      assert.equal(envoy.task.config[0].network_mode, 'host');
      assert.match(envoy.task.config[0].args, /^\$\{concat\(\s*\["-c", "\/alloc\/envoy\/envoy\.yaml", /);
      assert.equal(inDocker(ENVOY_TEMPLATE), '/alloc/envoy/envoy.yaml');
    });

    it("renders envoy/envoy.yaml exactly, with authz's sockets in the allocation's directory", function () {
      assert.ok(!/\$\{|%\{/.test(template), 'HCL would interpolate ${ or %{ inside the template');
      assert.deepEqual(parseYaml(renderEnvTemplate(template, AUTHZ_TASK_ENV)), envoyYamlOnNomad());
    });

    it("keeps the YAML alias of the plain listener's routes: the ACME route has the catch-all's action", function () {
      const rendered = parseYaml(renderEnvTemplate(template, AUTHZ_TASK_ENV));
      const manager = rendered.static_resources.listeners.find((l: Body) => l.name === 'agent_edge').filter_chains[0].filters[0].typed_config;
      const routes = manager.route_config.virtual_hosts[0].routes;
      assert.equal(routes[0].route, routes.at(-1).route);
    });

    it('renders once: no Consul lookup or Variable, so nothing in Consul or Nomad can re-render it and restart Envoy', function () {
      for (const destination of [ENVOY_YAML_DESTINATION, TLS_LISTENER_DESTINATION]) {
        const rendering = templateAt(authz.task, destination);
        assert.doesNotMatch(rendering.data, /\{\{[^}]*\b(service|services|key|keyOrDefault|ls|tree|nomadService|secret|nomadVar|nomadVarList|nomadVarExists)\b/);
        assert.equal(rendering.change_mode, 'noop');
      }
      // Envoy's own templates are the TLS files (test/nomad-edge-tls.test.ts): none restarts or signals Envoy.
      for (const other of envoy.task.template as Body[]) assert.equal(other.change_mode, 'noop', other.destination);
      assert.equal(envoy.task.consul ?? envoy.group.consul, undefined, 'no Consul token: the task reads nothing from Consul');
    });

    it("fills the CORS policy's allowed origin from the job's console_origin, as a JSON string", function () {
      assert.equal(authz.task.env[0].CONSOLE_ORIGIN, '${var.console_origin}');
      assert.equal(envoy.task.env[0].CONSOLE_ORIGIN, undefined, "Envoy's task renders no envoy.yaml");
      const origin = 'https://platform.example.com:8443';
      const rendered = parseYaml(renderEnvTemplate(template, { ...AUTHZ_TASK_ENV, CONSOLE_ORIGIN: origin }));
      const host = rendered.static_resources.listeners[0].filter_chains[0].filters[0].typed_config.route_config.virtual_hosts[0];
      assert.deepEqual(host.typed_per_filter_config['envoy.filters.http.cors'].allow_origin_string_match, [{ exact: origin }]);
    });

    it('renders a bootstrap Envoy accepts (v3 protos, no unknown field, a node for its subscriptions, gRPC services on static clusters)', function () {
      const schema = new EnvoySchema(loadEnvoyRoot());
      const rendered = parseYaml(renderEnvTemplate(template, AUTHZ_TASK_ENV));
      assert.deepEqual(schema.check('envoy.config.bootstrap.v3.Bootstrap', rendered), []);
      assert.deepEqual(envoyLoadProblems(rendered), []);
    });

    it('notices drift: a template edited apart from envoy.yaml no longer matches', function () {
      assert.ok(template.includes('timeout: 0.25s'));
      const drifted = parseYaml(renderEnvTemplate(template.replace('timeout: 0.25s', 'timeout: 0.5s'), AUTHZ_TASK_ENV));
      assert.notDeepStrictEqual(drifted, envoyYamlOnNomad());
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

    it("authz: authz-metrics in Envoy's group, on the port its task publishes, at the path its metrics port answers", async function () {
      const authz = await readJob('envoy.nomad.hcl', 'authz');
      const target = scrapeTargets(authz).find((service) => service.name === 'authz-metrics');
      assert.ok(target, 'a scrape target authz-metrics');
      assert.ok((authz.task.config[0].ports as string[]).includes(target.port));
      const redis = connectTestRedis();
      const running = await startTestAuthz({ redis, clock: systemClock, agentDomain: 'nomad-jobs-metrics.test' });
      try {
        const response = await fetch(`http://127.0.0.1:${running.authz.metricsPort}${metricsPath(target!)}`);
        assert.equal(response.status, 200);
        assert.match(await response.text(), /^# TYPE agent_platform_authz_checks_total counter$/m);
      } finally {
        await running.close();
        redis.disconnect();
      }
    });

    it("Envoy: platform-edge-metrics on the static port of envoy.yaml's prometheus_stats listener, whose one proxied path is the meta's", async function () {
      const envoy = await readJob('envoy.nomad.hcl', 'envoy');
      const targets = scrapeTargets(envoy);
      assert.deepEqual(targets.map((service) => service.name).sort(), ['authz-metrics', 'platform-edge-metrics']);
      const target = targets.find((service) => service.name === 'platform-edge-metrics');
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

  describe('Consul identities on edge nodes', function () {
    it('neither Envoy nor authz has a consul block: nothing in the edge group reads Consul, so neither gets a Consul token', async function () {
      // A task gets a Consul token only with a consul block on it or its group
      // (nomad/job_endpoint_hook_implicit_identities.go, `handleConsulTask`): none is needed now.
      const job = await parseFile('envoy.nomad.hcl');
      const group = job.job['platform-edge'][0].group.edge[0];
      assert.equal(group.consul, undefined);
      for (const [name, [task]] of Object.entries(group.task as Record<string, Body[]>)) {
        assert.equal(task!.consul, undefined, name);
        assert.doesNotMatch(JSON.stringify(task!.template ?? []), /service \\"|\{\{ ?services/, `${name}'s templates read Consul's catalog`);
      }
    });
  });

  describe('the platform image and the probes', function () {
    /** The program each platform task runs from the platform image: [file, task, program]. */
    const PROGRAMS = [
      ['control.nomad.hcl', undefined, 'control'],
      ['envoy.nomad.hcl', 'authz', 'authz'],
    ] as const;

    /** Every service of the job's group and task, each with its checks. */
    const servicesOf = ({ group, task }: ParsedJob): Body[] => [...((group.service ?? []) as Body[]), ...((task.service ?? []) as Body[])];
    const checksOf = (service: Body): Body[] => (service.check ?? []) as Body[];

    it('control and authz run the platform image\'s compiled JavaScript, never tsx', async function () {
      const build = JSON.parse(readFileSync(new URL('../tsconfig.build.json', import.meta.url), 'utf8'));
      assert.deepEqual([build.compilerOptions.rootDir, build.compilerOptions.outDir], ['.', 'dist'], 'dist/ mirrors the source tree');
      for (const [file, task, program] of PROGRAMS) {
        const config = (await readJob(file, task)).task.config[0];
        assert.equal(config.image, '${var.image}', file);
        assert.equal(config.command, 'node', file);
        assert.deepEqual(config.args, [`dist/${program}/main.js`], file);
        assert.ok(build.include.includes(program) && existsSync(new URL(`../${program}/main.ts`, import.meta.url)), `${file}: dist/${program}/main.js is compiled from ${program}/main.ts`);
        assert.ok(!JSON.stringify(config).includes('tsx'), `${file} still runs tsx`);
      }
    });

    it('restarts hang on liveness checks only: check_restart sits on /livez checks, never on a service or a readiness check', async function () {
      for (const [file, task] of [['control.nomad.hcl'], ['envoy.nomad.hcl', 'authz'], ['envoy.nomad.hcl', 'envoy']] as const) {
        for (const service of servicesOf(await readJob(file, task))) {
          // On a service, check_restart would apply to every check of it (job-specification/check_restart).
          assert.equal(service.check_restart, undefined, `${file}: service ${service.name} has check_restart`);
          for (const check of checksOf(service).filter((c) => c.check_restart)) {
            assert.deepEqual([check.type, check.path], ['http', '/livez'], `${file}: check "${check.name}" restarts the task but is not a liveness check`);
          }
        }
      }
      for (const [file, task] of PROGRAMS) {
        const checks = servicesOf(await readJob(file, task)).flatMap(checksOf);
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

    it("authz: with Redis down, its restarting check passes, and only Envoy's own health check of it fails (no Consul routing check)", async function () {
      const { group, task } = await readJob('envoy.nomad.hcl', 'authz');
      const cluster = (parseYaml(renderEnvTemplate(templateAt(task, ENVOY_TEMPLATE).data, AUTHZ_TASK_ENV)).static_resources.clusters as Body[]).find((c) => c.name === 'authz')!;
      const deadRedis = new Redis(await freePort(), '127.0.0.1', { maxRetriesPerRequest: 1, retryStrategy: () => 200, lazyConnect: true });
      deadRedis.on('error', () => undefined);
      const running = await startTestAuthz({ redis: deadRedis, clock: systemClock, agentDomain: 'nomad-jobs-probes.test' });
      try {
        for (const check of cluster.health_checks as Body[]) {
          assert.deepEqual(await running.client.healthCheck(check.grpc_health_check.service_name ?? ''), { status: 'NOT_SERVING' });
        }
        const authzService = (group.service as Body[]).find((s) => s.name === 'authz-metrics')!;
        const checks = checksOf(authzService);
        assert.ok(checks.length > 0);
        for (const check of checks) {
          assert.ok(check.check_restart, `check "${check.name}" on authz-metrics restarts nothing: it is there for the restart`);
          assert.equal((await fetch(`http://127.0.0.1:${running.authz.metricsPort}${check.path}`)).status, 200, `check "${check.name}" (${check.path})`);
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
