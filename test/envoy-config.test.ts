import assert from 'node:assert/strict';
import { WAKE_TIMEOUT_MAX_SECONDS } from '../authz/config.js';
import { readFileSync } from 'node:fs';
import type protobuf from 'protobufjs';
import { parse } from 'yaml';
import { loadEnvoyRoot } from '../proto/load.js';
import { AGENT_ID_METADATA_KEY, EXT_AUTHZ_METADATA_NAMESPACE } from '../authz/access-log-entry.js';
import { EnvoySchema, type SchemaIssue } from './support/envoy-schema.js';
import { AUTHZ_SOCKET_PATH } from '../envoy/local-edge/envoy-parity.js';
import { UNIX_SOCKET_PATH_MAX_BYTES } from '../contract/grpc-target.js';
import { rewrite } from './support/upstream/envoy-local-reply.js';
import { envoyLoadProblems, grpcClusterNames, localInfoProblems } from './support/envoy-rules.js';
import { AUTHZ_XDS_SOCKET_PATH } from '../scripts/lib/up-authz.js';

/**
 * envoy/envoy.yaml against Envoy's own v3 protos (from @grpc/grpc-js-xds), with no Envoy
 * binary: every field must exist, every `@type` must resolve, protoc-gen-validate rules
 * must hold; then the deliberate choices of docs/contract.md ("Edge") are asserted one by one.
 */

const BOOTSTRAP = 'envoy.config.bootstrap.v3.Bootstrap';
const CONFIG_PATH = new URL('../envoy/envoy.yaml', import.meta.url);

type Node = Record<string, any>;

function readConfig(): Node {
  return parse(readFileSync(CONFIG_PATH, 'utf8')) as Node;
}

function describeIssues(issues: SchemaIssue[]): string {
  return issues.map((issue) => `  ${issue.path || '(root)'}: ${issue.message}`).join('\n');
}

function edge(config: Node): { listener: Node; hcm: Node; extAuthz: Node; filters: Node[] } {
  const listener = (config.static_resources.listeners as Node[]).find((l) => l.name === 'agent_edge');
  assert.ok(listener, 'listener agent_edge');
  const network = listener.filter_chains[0].filters as Node[];
  const hcm = network.find((f) => f.name === 'envoy.filters.network.http_connection_manager')?.typed_config;
  assert.ok(hcm, 'http_connection_manager on the listener');
  const filters = hcm.http_filters as Node[];
  const extAuthz = filters.find((f) => f.name === 'envoy.filters.http.ext_authz')?.typed_config;
  assert.ok(extAuthz, 'ext_authz filter');
  return { listener, hcm, extAuthz, filters };
}

function cluster(config: Node, name: string): Node {
  const found = (config.static_resources.clusters as Node[]).find((c) => c.name === name);
  assert.ok(found, `cluster ${name}`);
  return found;
}

describe('envoy/envoy.yaml', function () {
  let root: protobuf.Root;
  let schema: EnvoySchema;
  let config: Node;

  before(function () {
    root = loadEnvoyRoot();
    schema = new EnvoySchema(root);
    config = readConfig();
  });

  describe('against Envoy v3 Bootstrap', function () {
    it('has no unknown field, unresolvable @type, deprecated field or validation-rule violation', function () {
      const issues = schema.check(BOOTSTRAP, config);
      assert.deepEqual(issues, [], `envoy.yaml does not match Envoy's protos:\n${describeIssues(issues)}`);
    });

    it('resolves every typed_config by its @type', function () {
      const urls = schema.typeUrls(config);
      assert.ok(urls.length >= 6, `expected the HCM, filters, access log and protocol options, found ${urls.join(', ')}`);
      for (const url of new Set(urls)) {
        assert.match(url, /^type\.googleapis\.com\//);
        assert.doesNotThrow(() => root.lookupType(url.replace('type.googleapis.com/', '')), `${url} resolves`);
      }
      assert.ok(urls.includes('type.googleapis.com/envoy.extensions.filters.http.ext_authz.v3.ExtAuthz'));
      assert.ok(urls.includes('type.googleapis.com/envoy.extensions.filters.http.router.v3.Router'));
    });
  });

  describe('the validator can fail', function () {
    function expectRejected(mutate: (copy: Node) => void, pattern: RegExp): void {
      const copy = structuredClone(config);
      mutate(copy);
      const issues = schema.check(BOOTSTRAP, copy);
      assert.ok(issues.some((issue) => pattern.test(`${issue.path}: ${issue.message}`)), `expected ${pattern}, got:\n${describeIssues(issues)}`);
    }

    it('rejects a misspelled field inside a typed_config', function () {
      expectRejected((copy) => {
        const { extAuthz } = edge(copy);
        extAuthz.failure_mode_alow = extAuthz.failure_mode_allow;
        delete extAuthz.failure_mode_allow;
      }, /unknown field "failure_mode_alow".*did you mean failure_mode_allow/);
    });

    it('rejects an unknown @type', function () {
      expectRejected((copy) => {
        const router = edge(copy).filters.find((f) => f.name === 'envoy.filters.http.router')!;
        router.typed_config['@type'] = 'type.googleapis.com/envoy.extensions.filters.http.router.v3.Routerr';
      }, /@type: cannot resolve @type envoy\.extensions\.filters\.http\.router\.v3\.Routerr/);
    });

    it('rejects a misspelled field in the bootstrap itself and in a map of Any', function () {
      expectRejected((copy) => {
        copy.static_resources.clusters[0].conect_timeout = '1s';
      }, /unknown field "conect_timeout"/);
      expectRejected((copy) => {
        const options = cluster(copy, 'authz').typed_extension_protocol_options['envoy.extensions.upstreams.http.v3.HttpProtocolOptions'];
        options.explicit_http_config.http2_protocol_option = {};
      }, /unknown field "http2_protocol_option"/);
    });

    it('rejects wrong value shapes: a bare-number Duration, an unknown enum value, two members of a oneof', function () {
      expectRejected((copy) => {
        edge(copy).extAuthz.grpc_service.timeout = 0.25;
      }, /grpc_service\.timeout: a Duration is a string/);
      expectRejected((copy) => {
        cluster(copy, 'agents').lb_policy = 'ORIGINAL_DST_LB_POLICY';
      }, /not a value of envoy\.config\.cluster\.v3\.Cluster\.LbPolicy/);
      expectRejected((copy) => {
        edge(copy).extAuthz.grpc_service.google_grpc = { target_uri: '127.0.0.1:7091', stat_prefix: 'authz' };
      }, /oneof target_specifier .* has envoy_grpc and google_grpc set/);
    });

    it('rejects a pipe without a path, and an address that is a pipe and a socket at once', function () {
      const authzAddress = (copy: Node) => cluster(copy, 'authz').load_assignment.endpoints[0].lb_endpoints[0].endpoint.address;
      expectRejected((copy) => {
        authzAddress(copy).pipe.path = '';
      }, /pipe\.path: must be at least 1 character/);
      expectRejected((copy) => {
        authzAddress(copy).socket_address = { address: '127.0.0.1', port_value: 7091 };
      }, /oneof address of envoy\.config\.core\.v3\.Address has socket_address and pipe set/);
    });

    it('rejects an ADS source of an unknown api_type, and an ADS source that names a gRPC service twice over', function () {
      expectRejected((copy) => {
        copy.dynamic_resources.ads_config.api_type = 'ADS';
      }, /dynamic_resources\.ads_config\.api_type: "ADS" is not a value of envoy\.config\.core\.v3\.ApiConfigSource\.ApiType/);
      expectRejected((copy) => {
        copy.dynamic_resources.ads_config.grpc_services[0].google_grpc = { target_uri: 'unix:/run/agent-platform/authz-xds.sock', stat_prefix: 'xds' };
      }, /oneof target_specifier .* has envoy_grpc and google_grpc set/);
    });

    it('rejects deprecated fields and broken protoc-gen-validate rules', function () {
      expectRejected((copy) => {
        cluster(copy, 'authz').http2_protocol_options = {};
      }, /http2_protocol_options is deprecated/);
      expectRejected((copy) => {
        delete cluster(copy, 'authz').health_checks[0].interval;
      }, /health_checks\[0\]\.interval: interval is required/);
      expectRejected((copy) => {
        edge(copy).hcm.local_reply_config.mappers[0].filter.response_flag_filter.flags.push('XX');
      }, /"XX" is not one of/);
    });
  });

  describe('the edge path of docs/contract.md', function () {
    it('binds admin to 127.0.0.1 and the agent edge to 0.0.0.0:7080', function () {
      assert.deepEqual(config.admin.address.socket_address, { address: '127.0.0.1', port_value: 9901 });
      assert.deepEqual(edge(config).listener.address.socket_address, { address: '0.0.0.0', port_value: 7080 });
    });

    it("lets Prometheus reach only GET /stats/prometheus of the admin, through a listener of its own on 0.0.0.0:9902", function () {
      const listener = (config.static_resources.listeners as Node[]).find((l) => l.name === 'prometheus_stats');
      assert.ok(listener, 'listener prometheus_stats');
      assert.deepEqual(listener.address.socket_address, { address: '0.0.0.0', port_value: 9902 });
      const hcm = listener.filter_chains[0].filters[0].typed_config;
      assert.deepEqual(hcm.http_filters.map((f: Node) => f.name), ['envoy.filters.http.router']);
      const hosts = hcm.route_config.virtual_hosts as Node[];
      assert.equal(hosts.length, 1);
      const [stats, rest, ...more] = hosts[0]!.routes as Node[];
      assert.equal(more.length, 0);
      // An exact path (no prefix: /stats/prometheus/../quitquitquit must not match) and GET only.
      assert.deepEqual(stats!.match, { path: '/stats/prometheus', headers: [{ name: ':method', string_match: { exact: 'GET' } }] });
      assert.equal(stats!.route.cluster, 'envoy_admin');
      assert.equal(stats!.route.prefix_rewrite, undefined);
      assert.deepEqual(rest!.match, { prefix: '/' });
      assert.equal(rest!.direct_response.status, 404);
      // The admin cluster is the admin listener itself, on loopback.
      const admin = cluster(config, 'envoy_admin');
      assert.deepEqual(admin.load_assignment.endpoints[0].lb_endpoints.map((e: Node) => e.endpoint.address.socket_address), [config.admin.address.socket_address]);
      // No other listener or route reaches the admin cluster.
      const clustersRouted = JSON.stringify(config.static_resources.listeners).match(/"cluster":"envoy_admin"/g) ?? [];
      assert.equal(clustersRouted.length, 1);
    });

    it('takes the client address from the TCP peer by default', function () {
      const { hcm } = edge(config);
      assert.equal(hcm.use_remote_address, true);
      assert.equal(hcm.xff_num_trusted_hops, 0);
    });

    it('has one catch-all virtual host routing everything to the agents cluster', function () {
      const hosts = edge(config).hcm.route_config.virtual_hosts as Node[];
      assert.equal(hosts.length, 1);
      assert.deepEqual(hosts[0]!.domains, ['*']);
      const routes = hosts[0]!.routes as Node[];
      const last = routes.at(-1)!;
      assert.deepEqual(last.match, { prefix: '/' });
      assert.equal(last.route.cluster, 'agents');
      // Every other route forwards the same way, or is the redirect to https, off by default (test/envoy-tls.test.ts).
      for (const other of routes.slice(0, -1)) {
        if (other.route) assert.deepEqual(other.route, last.route, JSON.stringify(other.match));
        else assert.equal(other.redirect?.https_redirect, true, JSON.stringify(other.match));
      }
    });

    it('runs ext_authz over gRPC, fail closed, before the router, sending only the headers authz reads', function () {
      const { extAuthz, filters } = edge(config);
      assert.deepEqual(filters.map((f) => f.name), ['envoy.filters.http.cors', 'envoy.filters.http.ext_authz', 'envoy.filters.http.router']);
      assert.equal(extAuthz.grpc_service.envoy_grpc.cluster_name, 'authz');
      // authz holds a parked agent's Check up to WAKE_TIMEOUT_SECONDS and then answers 503 itself:
      // Envoy's deadline must leave it that time and a margin, or the caller gets Envoy's error instead.
      const seconds = Number(/^(\d+)s$/.exec(extAuthz.grpc_service.timeout)?.[1]);
      assert.ok(seconds >= WAKE_TIMEOUT_MAX_SECONDS + 5 && seconds <= 60, `ext_authz timeout ${extAuthz.grpc_service.timeout}: the longest wake plus a margin`);
      assert.equal(extAuthz.transport_api_version, 'V3');
      assert.equal(extAuthz.failure_mode_allow, false);
      assert.deepEqual(extAuthz.status_on_error, { code: 'GatewayTimeout' }, 'a status authz never denies with: the local reply mapper answers 503');
      assert.equal(extAuthz.include_peer_certificate, false);
      assert.equal(extAuthz.clear_route_cache, false);
      assert.equal(extAuthz.with_request_body, undefined, 'bodies stream; authz never sees them');
      const allowed = (extAuthz.allowed_headers.patterns as Node[]).map((p) => p.exact).sort();
      assert.deepEqual(allowed, ['authorization', 'traceparent', 'x-envoy-external-address', 'x-request-id']);
    });

    it("answers the console's CORS preflight before ext_authz, for one exact origin, without credentials", function () {
      const { hcm, filters } = edge(config);
      // The cors filter answers a preflight from an allowed origin itself and stops the chain
      // (cors_filter.cc, `CorsFilter::decodeHeaders`): placed after ext_authz, a preflight,
      // which carries no key, would be refused by authz for a private agent.
      assert.equal(filters[0]!.name, 'envoy.filters.http.cors');
      assert.equal(filters[0]!.typed_config['@type'], 'type.googleapis.com/envoy.extensions.filters.http.cors.v3.Cors');
      const policy = hcm.route_config.virtual_hosts[0].typed_per_filter_config['envoy.filters.http.cors'];
      assert.equal(policy['@type'], 'type.googleapis.com/envoy.extensions.filters.http.cors.v3.CorsPolicy');
      assert.deepEqual(policy.allow_origin_string_match, [{ exact: 'http://127.0.0.1:7070' }], 'the console of npm run up; the Nomad job fills in CONSOLE_ORIGIN');
      assert.equal(policy.allow_credentials, undefined, 'no cookies: the access key travels in Authorization');
      assert.equal(policy.forward_not_matching_preflights, undefined, "another origin's preflight goes through ext_authz like any request");
      assert.equal(policy.filter_enabled, undefined);
      assert.match(policy.allow_headers, /\bauthorization\b/);
      assert.match(policy.allow_methods, /\bPOST\b/);
    });

    it('GatewayTimeout is the HttpStatus enum value 504', function () {
      const codes = root.lookupEnum('envoy.type.v3.StatusCode');
      assert.equal(codes.values[edge(config).extAuthz.status_on_error.code], 504);
    });

    it('answers the caller what docs/contract.md says, by Envoy’s local-reply rules: authz down is a plain-text 503, authz’s own denials pass untouched', function () {
      const { hcm, extAuthz } = edge(config);
      const onError = root.lookupEnum('envoy.type.v3.StatusCode').values[extAuthz.status_on_error.code]!;
      // ext_authz.cc, CheckStatus::Error: status_on_error, an EMPTY body, flag UAEX.
      const authzDown = rewrite(hcm.local_reply_config, { status: onError, body: '', flags: ['UAEX'] });
      assert.equal(authzDown.status, 503);
      assert.match(authzDown.body, /^service unavailable: .+\n$/);
      // CheckStatus::Denied: authz's status and body, flag UAEX.
      for (const [status, body] of [[401, 'unauthorised\n'], [404, 'no agent at this address\n'], [429, 'rate limit\n'], [503, 'no running replica\n']] as const) {
        assert.deepEqual(rewrite(hcm.local_reply_config, { status, body, flags: ['UAEX'] }), { status, body }, `authz's ${status} untouched`);
      }
      assert.deepEqual(rewrite(hcm.local_reply_config, { status: 503, body: '', flags: ['UF'] }).status, 502, 'nothing listens: 502');
      assert.deepEqual(rewrite(hcm.local_reply_config, { status: 503, body: '', flags: ['UH'] }).status, 503);
    });

    it('routes through ORIGINAL_DST on the ext_authz metadata key upstream, never on a header', function () {
      const agents = cluster(config, 'agents');
      assert.equal(agents.type, 'ORIGINAL_DST');
      assert.equal(agents.lb_policy, 'CLUSTER_PROVIDED');
      assert.equal(agents.load_assignment, undefined);
      assert.deepEqual(agents.original_dst_lb_config, {
        use_http_header: false,
        metadata_key: { key: 'envoy.filters.http.ext_authz', path: [{ key: 'upstream' }] },
      });
      assert.ok(agents.connect_timeout, 'a connect timeout');
      assert.ok(agents.cleanup_interval, 'a cleanup interval');
    });

    it('raises the agents circuit breakers well past the 1024 defaults', function () {
      const thresholds = cluster(config, 'agents').circuit_breakers.thresholds as Node[];
      const byDefault = thresholds.find((t) => (t.priority ?? 'DEFAULT') === 'DEFAULT');
      assert.ok(byDefault, 'DEFAULT priority thresholds');
      for (const limit of ['max_connections', 'max_pending_requests', 'max_requests', 'max_retries']) {
        assert.ok(Number(byDefault[limit]) > 1024, `${limit} = ${byDefault[limit]}`);
      }
    });

    it("passes what Envoy checks past its protos: a node for its xDS subscriptions, every gRPC service on a static cluster, no two chains alike (test/support/envoy-rules.ts)", function () {
      assert.deepEqual(envoyLoadProblems(config), []);
      const { node: _node, ...nameless } = config;
      assert.ok(localInfoProblems(nameless).length > 0, 'without a node, ADS and LDS refuse to start');
      assert.deepEqual(grpcClusterNames(config).sort(), ['authz', 'authz_xds']);
    });

    it('has no HTTPS listener of its own: it asks authz for agent_edge_tls by LDS over ADS, as node agent-edge of cluster agent-platform-edge', function () {
      const names = (config.static_resources.listeners as Node[]).map((l) => l.name);
      assert.deepEqual(names, ['agent_edge', 'prometheus_stats'], 'a static listener cannot be updated in place (ListenerImpl::blockUpdate)');
      assert.deepEqual(config.node, { id: 'agent-edge', cluster: 'agent-platform-edge' });
      assert.equal(config.dynamic_resources.cds_config, undefined, 'clusters stay static: the gRPC clusters must be (AsyncClientFactoryImpl)');
      assert.deepEqual(config.dynamic_resources, {
        lds_config: { ads: {}, resource_api_version: 'V3' },
        ads_config: { api_type: 'GRPC', transport_api_version: 'V3', grpc_services: [{ envoy_grpc: { cluster_name: 'authz_xds' } }] },
      });
    });

    it("reaches authz's xDS server on a socket of its own, over HTTP/2", function () {
      const xds = cluster(config, 'authz_xds');
      assert.equal(xds.type, 'STATIC');
      const endpoints = xds.load_assignment.endpoints.flatMap((locality: Node) => locality.lb_endpoints);
      assert.equal(endpoints.length, 1);
      assert.deepEqual(endpoints[0].endpoint.address, { pipe: { path: AUTHZ_XDS_SOCKET_PATH } });
      assert.notEqual(AUTHZ_XDS_SOCKET_PATH, AUTHZ_SOCKET_PATH, "not the Check socket: grpc-js serves xDS, apart from authz's own server");
      assert.ok(Buffer.byteLength(AUTHZ_XDS_SOCKET_PATH) <= UNIX_SOCKET_PATH_MAX_BYTES);
      const options = xds.typed_extension_protocol_options['envoy.extensions.upstreams.http.v3.HttpProtocolOptions'];
      assert.ok(options.explicit_http_config.http2_protocol_options, 'HTTP/2 to authz');
    });

    it('reaches authz, its sidecar, on a Unix socket over HTTP/2, health checks included', function () {
      const authz = cluster(config, 'authz');
      assert.equal(authz.type, 'STATIC');
      const endpoints = authz.load_assignment.endpoints.flatMap((locality: Node) => locality.lb_endpoints);
      assert.equal(endpoints.length, 1, 'one authz: the one beside this Envoy');
      const { address } = endpoints[0].endpoint;
      assert.deepEqual(Object.keys(address), ['pipe'], 'no TCP address: authz opens no gRPC port');
      assert.deepEqual(address.pipe, { path: AUTHZ_SOCKET_PATH });
      assert.ok(Buffer.byteLength(address.pipe.path) <= UNIX_SOCKET_PATH_MAX_BYTES);
      // Health checks dial the host's own address, the pipe, unless the endpoint names a port of their own (HealthCheckConfig).
      assert.ok((authz.health_checks as Node[]).every((check) => check.grpc_health_check), "authz's gRPC health service");
      assert.equal(endpoints[0].endpoint.health_check_config, undefined);
      const options = authz.typed_extension_protocol_options['envoy.extensions.upstreams.http.v3.HttpProtocolOptions'];
      assert.equal(options['@type'], 'type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions');
      assert.ok(options.explicit_http_config.http2_protocol_options, 'HTTP/2 to authz');
      assert.ok(Number(authz.circuit_breakers.thresholds[0].max_requests) > 1024, 'one Check per edge request');
    });

    it('maps UF/URX to 502 and UH to 503 by response flag, never by status code alone', function () {
      const mappers = (edge(config).hcm.local_reply_config.mappers as Node[]).filter((m) => m.filter.response_flag_filter);
      for (const mapper of edge(config).hcm.local_reply_config.mappers as Node[]) assert.match(mapper.body.inline_string, /\S/, 'a plain-text body');
      const statusFor = (flag: string): number | undefined =>
        mappers.find((m) => (m.filter.response_flag_filter.flags as string[]).includes(flag))?.status_code;
      assert.equal(statusFor('UF'), 502);
      assert.equal(statusFor('URX'), 502);
      assert.equal(statusFor('UH'), 503);
      assert.equal(statusFor('UAEX'), undefined, 'authz denials pass untouched');
      assert.equal(edge(config).hcm.local_reply_config.body_format, undefined, 'no global format over authz bodies');
    });

    it('writes a JSON access log to stdout', function () {
      const [log] = edge(config).hcm.access_log as Node[];
      assert.equal(log!.typed_config['@type'], 'type.googleapis.com/envoy.extensions.access_loggers.stream.v3.StdoutAccessLog');
      const fields = log!.typed_config.log_format.json_format as Record<string, string>;
      for (const operator of ['%REQ(X-REQUEST-ID)%', '%REQ(:AUTHORITY)%', '%RESPONSE_CODE%', '%RESPONSE_FLAGS%', '%DURATION%', '%UPSTREAM_HOST%']) {
        assert.ok(Object.values(fields).includes(operator), `logs ${operator}`);
      }
      assert.ok(!JSON.stringify(fields).toLowerCase().includes('authorization'), 'never logs the access key');
    });

    it("streams allowed requests' entries to authz's access-log service, where the agent figures are counted", function () {
      const grpc = (edge(config).hcm.access_log as Node[]).find((log) => log.name === 'envoy.access_loggers.http_grpc');
      assert.ok(grpc, 'an http_grpc access logger');
      assert.equal(grpc.typed_config['@type'], 'type.googleapis.com/envoy.extensions.access_loggers.grpc.v3.HttpGrpcAccessLogConfig');
      const common = grpc.typed_config.common_config;
      assert.equal(common.grpc_service.envoy_grpc.cluster_name, 'authz', "authz's gRPC port serves the access-log service");
      assert.equal(common.transport_api_version, 'V3');
      assert.equal(common.buffer_flush_interval, '1s');
      // Only what authz's OK answer marked: the namespace and key authz/access-log-entry.ts reads.
      assert.deepEqual(grpc.filter.metadata_filter, {
        matcher: { filter: EXT_AUTHZ_METADATA_NAMESPACE, path: [{ key: AGENT_ID_METADATA_KEY }], value: { present_match: true } },
        match_if_key_not_found: false,
      });
      const copy = structuredClone(config);
      const copied = (edge(copy).hcm.access_log as Node[]).find((log) => log.name === 'envoy.access_loggers.http_grpc')!;
      copied.typed_config.common_config.log_name = '';
      delete copied.typed_config.common_config.grpc_service;
      const issues = describeIssues(schema.check(BOOTSTRAP, copy));
      assert.match(issues, /log_name/, 'the validator holds the logger to its proto rules');
      assert.match(issues, /grpc_service/);
    });
  });
});
