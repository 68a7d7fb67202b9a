import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { dirname, posix } from 'node:path';
import { parse as parseHcl } from '@cdktf/hcl2json';
import { parse as parseYaml } from 'yaml';
import { loadConfig } from '../control/config/config.js';
import { agentUrl } from '../control/services/agent-presenter.js';
import { loadEnvoyRoot } from '../proto/load.js';
import { tlsListenerFor, tlsListenerTemplate } from '../authz/xds/tls-listener.js';
import { envoyRedirectArgs } from '../scripts/lib/up-edge-tls.js';
import { EnvoySchema } from './support/envoy-schema.js';
import { validateNetworks } from './support/fake-nomad/validate/network.js';
import { validateGroupServices } from './support/fake-nomad/validate/service-sets.js';
import { validateTemplate } from './support/fake-nomad/validate/template.js';
import { validatePath } from './support/fake-nomad/validate/variables.js';
import {
  AUTHZ_TASK_ENV,
  ENVOY_TASK_ENV,
  ENVOY_YAML_DESTINATION,
  NOMAD_TLS_PORT,
  SECRETS_DIR_IN_DOCKER,
  TLS_DIR_IN_TASK,
  TLS_LISTENER_DESTINATION,
  listenerOf,
  renderEnvTemplate,
  sdsSourceOf,
  templateAt,
  tlsListenerYamlOnNomad,
  tlsSdsYamlOnNomad,
} from './support/nomad-envoy-task.js';
import { envoyLoadProblems } from './support/envoy-rules.js';
import { renderTemplate } from './support/upstream/consul-template-render.js';

/**
 * HTTPS on Nomad (nomad-jobs/envoy.nomad.hcl): the TLS listener authz serves Envoy, from the
 * job's copy of envoy/tls-listener.yaml, on an unprivileged static port; the agent domain's
 * certificate rendered from the Envoy task's own Variable into that task's secrets directory
 * and swapped without a restart; the EDGE_HTTP_REDIRECT runtime layer as a job variable; and
 * https agent URLs from the control job.
 */

type Body = Record<string, any>;

const JOB_FILE = new URL('../nomad-jobs/envoy.nomad.hcl', import.meta.url);
const CONTROL_FILE = new URL('../nomad-jobs/control.nomad.hcl', import.meta.url);

/** The only label of a labelled block, with its body. */
const only = (blocks: Record<string, Body[]>): [string, Body] => {
  const entries = Object.entries(blocks);
  assert.equal(entries.length, 1);
  return [entries[0]![0], entries[0]![1][0]!];
};

/** A destination under the task directory as the container sees it: `secrets/x` is `/secrets/x`. */
const inContainer = (destination: string) => {
  assert.ok(destination.startsWith('secrets/'), destination);
  return posix.join(SECRETS_DIR_IN_DOCKER, destination.slice('secrets/'.length));
};

/** The Variable path of a template's `{{ with nomadVar "…" }}`, or null. */
const variableOf = (template: Body): string | null => /\{\{ with nomadVar "([^"]+)" -?\}\}/.exec(template.data)?.[1] ?? null;

const PEM_CHAIN = '-----BEGIN CERTIFICATE-----\nMIIBfake\n-----END CERTIFICATE-----\n-----BEGIN CERTIFICATE-----\nMIIBintermediate\n-----END CERTIFICATE-----\n';
const PEM_KEY = '-----BEGIN PRIVATE KEY-----\nMIGHfake\n-----END PRIVATE KEY-----\n';

describe('envoy.nomad.hcl: HTTPS for agent URLs', function () {
  let file: Body;
  let jobId: string;
  let group: Body;
  let groupName: string;
  let envoy: Body;
  let authz: Body;
  /** envoy.yaml and tls-listener.yaml as authz's templates render them in the allocation. */
  let rendered: Body;
  let tlsListener: Body;
  let schema: EnvoySchema;

  before(async function () {
    file = (await parseHcl('envoy.nomad.hcl', readFileSync(JOB_FILE, 'utf8'))) as Body;
    let job: Body;
    [jobId, job] = only(file.job);
    [groupName, group] = only(job.group);
    envoy = group.task.envoy[0];
    authz = group.task.authz[0];
    rendered = parseYaml(renderEnvTemplate(templateAt(authz, ENVOY_YAML_DESTINATION).data, AUTHZ_TASK_ENV));
    tlsListener = parseYaml(renderEnvTemplate(templateAt(authz, TLS_LISTENER_DESTINATION).data, AUTHZ_TASK_ENV));
    schema = new EnvoySchema(loadEnvoyRoot());
  });

  describe('the TLS listener authz serves', function () {
    it('renders envoy/tls-listener.yaml exactly, but for its port and where its certificate is', function () {
      const template = templateAt(authz, TLS_LISTENER_DESTINATION);
      assert.ok(!/\$\{|%\{/.test(template.data), 'HCL would interpolate ${ or %{ inside the template');
      assert.deepEqual(tlsListener, tlsListenerYamlOnNomad());
      assert.equal(template.change_mode, 'noop');
      assert.equal(variableOf(template), null, 'it reads the task environment only');
    });

    it('notices drift: a copy edited apart from envoy/tls-listener.yaml no longer matches', function () {
      const { data } = templateAt(authz, TLS_LISTENER_DESTINATION);
      assert.ok(data.includes('transport_socket_connect_timeout: 10s'));
      assert.notDeepStrictEqual(parseYaml(renderEnvTemplate(data.replace('transport_socket_connect_timeout: 10s', 'transport_socket_connect_timeout: 20s'), AUTHZ_TASK_ENV)), tlsListenerYamlOnNomad());
    });

    it("is, built as authz builds it from the two rendered files, a Listener Envoy takes, beside the bootstrap it runs", function () {
      for (const hostnames of [[], ['shop.example.com'], ['shop.example.com', 'api.example.org']]) {
        const served = tlsListenerFor(tlsListenerTemplate(tlsListener, rendered), hostnames);
        assert.deepEqual(schema.check('envoy.config.listener.v3.Listener', served), [], hostnames.join(', '));
        assert.deepEqual(envoyLoadProblems(rendered, [served]), [], hostnames.join(', '));
      }
    });
  });

  describe('the TLS port', function () {
    it("is the group's static port edge_tls, 7443, on which the served TLS listener listens", function () {
      const [port] = group.network[0].port.edge_tls as Body[];
      assert.equal(port!.static, NOMAD_TLS_PORT);
      assert.deepEqual(tlsListener.address.socket_address, { address: '0.0.0.0', port_value: port!.static });
    });

    it('needs no privilege: above 1023, for uid 101 with every capability dropped', function () {
      assert.ok(NOMAD_TLS_PORT > 1023);
      assert.equal(envoy.user, '101:101');
      assert.deepEqual(envoy.config[0].cap_drop, ['ALL']);
      assert.equal(envoy.config[0].cap_add, undefined);
    });

    it("redirects plain HTTP to 443, the port callers use, which the load balancer maps to 7443", function () {
      const routes = listenerOf(rendered, 'agent_edge').filter_chains[0].filters[0].typed_config.route_config.virtual_hosts[0].routes as Body[];
      assert.equal(routes.find((route) => route.redirect)!.redirect.port_redirect, 443);
    });

    it('has a Consul service with a TCP check, as the plain port has', function () {
      const services = group.service as Body[];
      const plain = services.find((s) => s.port === 'edge')!;
      const tls = services.find((s) => s.port === 'edge_tls');
      assert.ok(tls, 'a service on edge_tls');
      assert.equal(tls.name, 'platform-edge-tls');
      assert.equal(tls.provider, plain.provider);
      assert.deepEqual(tls.check.map((c: Body) => [c.type, c.interval, c.timeout]), plain.check.map((c: Body) => [c.type, c.interval, c.timeout]));
    });
  });

  describe('the certificate', function () {
    it("renders envoy/tls-sds.yaml where tls-listener.yaml's SDS source points, in the Envoy task's secrets, once, and Envoy accepts it", function () {
      const source = sdsSourceOf(tlsListener);
      const sdsTemplate = templateAt(envoy, `${TLS_DIR_IN_TASK}/sds.yaml`);
      assert.equal(source.path, inContainer(sdsTemplate.destination), "Envoy's own secrets, as Envoy's container sees them");
      assert.equal(source.watched_directory.path, dirname(source.path));
      assert.ok(!/\$\{|%\{/.test(sdsTemplate.data), 'HCL would interpolate ${ or %{ inside the template');
      const sds = parseYaml(renderEnvTemplate(sdsTemplate.data, ENVOY_TASK_ENV));
      assert.deepEqual(sds, tlsSdsYamlOnNomad());
      assert.deepEqual(schema.check('envoy.service.discovery.v3.DiscoveryResponse', sds), []);
      assert.equal(variableOf(sdsTemplate), null, 'it reads the task environment only');
      assert.equal(sdsTemplate.change_mode, 'noop');
    });

    it('writes the chain and the key the SDS file names, in the directory it watches', function () {
      const certificate = tlsSdsYamlOnNomad().resources[0].tls_certificate;
      const crt = templateAt(envoy, `${TLS_DIR_IN_TASK}/tls.crt`);
      const key = templateAt(envoy, `${TLS_DIR_IN_TASK}/tls.key`);
      assert.equal(inContainer(crt.destination), certificate.certificate_chain.filename);
      assert.equal(inContainer(key.destination), certificate.private_key.filename);
      assert.equal(dirname(inContainer(key.destination)), certificate.watched_directory.path);
      assert.equal(certificate.watched_directory.path, sdsSourceOf(tlsListener).watched_directory.path);
    });

    it("reads them from the Variable at the Envoy task's own path, items tls_crt and tls_key, byte for byte", function () {
      const path = `nomad/jobs/${jobId}/${groupName}/envoy`;
      assert.equal(validatePath(path), null);
      const items = { tls_crt: PEM_CHAIN, tls_key: PEM_KEY };
      for (const [destination, expected] of [['tls.crt', PEM_CHAIN], ['tls.key', PEM_KEY]] as const) {
        const template = templateAt(envoy, `${TLS_DIR_IN_TASK}/${destination}`);
        // nomad/jobs/<job>/<group>/<task>: this task's workload identity reads it without a policy (acl/acl.go).
        assert.equal(variableOf(template), path, destination);
        const result = renderTemplate(template.data, (asked) => (asked === path ? items : undefined));
        assert.deepEqual(result.missing, []);
        assert.equal(result.output.toString('utf8'), expected, destination);
        // Until the Variable exists Nomad does not render the file, nor start Envoy.
        assert.deepEqual(renderTemplate(template.data, () => undefined).missing, [path]);
      }
      const authz = group.task.authz[0].template.find((t: Body) => t.env === true);
      assert.notEqual(variableOf(authz), path, "authz's Variable is another");
    });

    it("are Envoy's alone (0600, its uid and gid), and a new Variable swaps them without a restart", function () {
      const [uid, gid] = String(envoy.user).split(':').map(Number);
      for (const destination of ['tls.crt', 'tls.key']) {
        const template = templateAt(envoy, `${TLS_DIR_IN_TASK}/${destination}`);
        assert.equal(template.perms, '0600', destination);
        assert.deepEqual([template.uid, template.gid], [uid, gid], destination);
        // Envoy's watched_directory picks up consul-template's rename: no restart, no signal.
        assert.equal(template.change_mode, 'noop', destination);
        assert.equal(template.env, undefined, destination);
      }
    });
  });

  describe('EDGE_HTTP_REDIRECT', function () {
    it('is the job variable edge_http_redirect, a bool, off by default', function () {
      const [variable] = file.variable.edge_http_redirect as Body[];
      assert.equal(variable!.type, '${bool}');
      assert.equal(variable!.default, false);
    });

    it("adds to Envoy's arguments exactly the runtime layer `npm run up` passes, and nothing when off", function () {
      const args = String(envoy.config[0].args);
      const match = /^\$\{concat\(\s*(\[[^\]]*\]),\s*var\.edge_http_redirect \? (\[.*\]) : \[\],?\s*\)\}$/s.exec(args);
      assert.ok(match, `args is concat(<base>, var.edge_http_redirect ? [...] : []): ${args}`);
      // HCL's string escapes here (\") are JSON's.
      assert.deepEqual(JSON.parse(match[1]!), ['-c', '/alloc/envoy/envoy.yaml', '--log-level', 'warn']);
      assert.deepEqual(JSON.parse(match[2]!), envoyRedirectArgs(true));
    });
  });

  it('control.nomad.hcl gives agents https:// URLs without a port: 443, which the load balancer maps to 7443', async function () {
    const control = (await parseHcl('control.nomad.hcl', readFileSync(CONTROL_FILE, 'utf8'))) as Body;
    const [, job] = only(control.job);
    const [, controlGroup] = only(job.group);
    const [, task] = only(controlGroup.task);
    const env = task.env[0] as Body;
    const domain = control.variable.agent_domain[0].default;
    const config = loadConfig({
      DATABASE_URL: 'postgres://platform@db.internal:5432/platform',
      REDIS_URL: 'redis://redis.internal:6379',
      MASTER_KEY: randomBytes(32).toString('base64'),
      AGENT_DOMAIN: domain,
      AGENT_URL_SCHEME: env.AGENT_URL_SCHEME,
      AGENT_URL_PORT: env.AGENT_URL_PORT,
    });
    assert.equal(agentUrl('support-bot-x7k2p9qa', config.agentUrl), `https://support-bot-x7k2p9qa.${domain}`);
  });

  describe("Nomad's own validators (test/support/fake-nomad/validate)", function () {
    const SECOND = 1_000_000_000;
    const duration = (text: string) => {
      const match = /^(\d+)(ms|s|m)$/.exec(text);
      assert.ok(match, text);
      return Number(match[1]) * { ms: SECOND / 1000, s: SECOND, m: 60 * SECOND }[match[2] as 'ms' | 's' | 'm'];
    };

    it("accept the edge group's ports and services and every template of Envoy's and authz's, as the job API would canonicalize them", function () {
      const ports = Object.entries(group.network[0].port as Record<string, Body[]>).map(([label, [port]]) => ({ Label: label, Value: port!.static ?? 0, To: port!.to ?? 0, HostNetwork: '' }));
      const services = (group.service as Body[]).map((service) => ({
        Name: service.name, PortLabel: service.port, Provider: service.provider, AddressMode: '', Address: '', OnUpdate: '', TaskName: '',
        Checks: (service.check as Body[]).map((check) => ({
          Name: check.name, Type: check.type, Path: check.path ?? '', Command: '', Method: '', Interval: duration(check.interval), Timeout: duration(check.timeout),
          InitialStatus: '', AddressMode: '', OnUpdate: '', PortLabel: '', TaskName: '', Expose: false, Notes: '', TLSServerName: '',
          SuccessBeforePassing: 0, FailuresBeforeCritical: 0, FailuresBeforeWarning: 0,
        })),
      }));
      const tg = {
        Networks: [{ ReservedPorts: ports.filter((p) => p.Value !== 0), DynamicPorts: ports.filter((p) => p.Value === 0), Hostname: '' }],
        Services: services,
        Tasks: Object.keys(group.task).map((name) => ({ Name: name, Services: [] })),
      };
      assert.equal(validateNetworks(tg)?.toString() ?? null, null);
      assert.equal(validateGroupServices(tg)?.toString() ?? null, null);
      for (const template of [...(envoy.template as Body[]), ...(authz.template as Body[])]) {
        // api/tasks.go, `Template.Canonicalize`: change_mode restart, splay 5s, perms 0644 unless given.
        const api = { SourcePath: '', EmbeddedTmpl: template.data, DestPath: template.destination, ChangeMode: template.change_mode ?? 'restart', ChangeSignal: '', Splay: 5 * SECOND, Perms: template.perms ?? '0644', Envvars: template.env ?? false };
        assert.equal(validateTemplate(api)?.toString() ?? null, null, template.destination);
      }
    });

    it('refuse what Nomad would: a static port used twice, and a template writing outside the allocation', function () {
      const tg = { Networks: [{ ReservedPorts: [{ Label: 'edge', Value: 7080, To: 0, HostNetwork: '' }, { Label: 'edge_tls', Value: 7080, To: 0, HostNetwork: '' }], DynamicPorts: [], Hostname: '' }], Tasks: [] };
      assert.match(String(validateNetworks(tg)), /Static port 7080 already reserved by taskgroup network:edge/);
      const template = { SourcePath: '', EmbeddedTmpl: 'x', DestPath: '../../../etc/tls.key', ChangeMode: 'noop', ChangeSignal: '', Splay: 0, Perms: '0600', Envvars: false };
      assert.match(String(validateTemplate(template)), /destination escapes allocation directory/);
    });
  });
});
