import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { parse } from 'yaml';
import { loadEnvoyRoot } from '../proto/load.js';
import { customDomainSecretName, tlsListenerFor, tlsListenerTemplate } from '../authz/xds/tls-listener.js';
import { ACME_CHALLENGE_PREFIX, HTTP_REDIRECT_RUNTIME_KEY } from '../envoy/local-edge/envoy-parity.js';
import { loadLocalEdgeConfig } from '../envoy/local-edge/config.js';
import { TLS_MIN_VERSION, TLS12_CIPHER_SUITES } from '../envoy/local-edge/tls-policy.js';
import { AUTHZ_XDS_SOCKET_PATH, envoyBootstrapFor, upXdsSocket } from '../scripts/lib/up-authz.js';
import { envoyRedirectArgs, envoyTlsFor, upEdgeTls } from '../scripts/lib/up-edge-tls.js';
import {
  envoyLoadProblems,
  filterChainProblems,
  grpcClusterNames,
  grpcClusterProblems,
  localInfoProblems,
  servedChainProblems,
  tlsInspectorProblems,
} from './support/envoy-rules.js';
import { EnvoySchema, type SchemaIssue } from './support/envoy-schema.js';

/**
 * The edge's HTTPS: the listener authz serves Envoy by LDS (envoy/tls-listener.yaml with
 * envoy.yaml's connection manager, and a chain per custom domain: authz/xds/tls-listener.ts),
 * the bootstrap that asks authz for it, and the SDS file of the agent domain's certificate,
 * against Envoy's own protos and the checks Envoy makes when it loads them
 * (test/support/envoy-rules.ts); the redirect route; the local edge's copy of the TLS policy;
 * and what `npm run up` renders of them for an installed Envoy.
 */

type Node = Record<string, any>;
const BOOTSTRAP = 'envoy.config.bootstrap.v3.Bootstrap';
const LISTENER = 'envoy.config.listener.v3.Listener';
const DISCOVERY_RESPONSE = 'envoy.service.discovery.v3.DiscoveryResponse';
const bootstrapYaml = readFileSync(new URL('../envoy/envoy.yaml', import.meta.url), 'utf8');
const tlsListenerYaml = readFileSync(new URL('../envoy/tls-listener.yaml', import.meta.url), 'utf8');
const sdsYaml = readFileSync(new URL('../envoy/tls-sds.yaml', import.meta.url), 'utf8');

/** A custom domain, and another, as authz's xDS server would get them from Redis. */
const SHOP = 'shop.example.com';
const API = 'api.example.org';

const staticListener = (config: Node, name: string): Node => {
  const found = (config.static_resources.listeners as Node[]).find((l) => l.name === name);
  assert.ok(found, `listener ${name}`);
  return found;
};
/** The listener authz serves for these custom hostnames, built from the two files as authz builds it. */
const served = (hostnames: string[], listenerFile: Node = parse(tlsListenerYaml), bootstrap: Node = parse(bootstrapYaml)): Node =>
  tlsListenerFor(tlsListenerTemplate(listenerFile, bootstrap), hostnames);
/** The agent domain's chain: the one without filter_chain_match. */
const agentDomainChain = (listener: Node): Node => {
  const chains = (listener.filter_chains as Node[]).filter((chain) => chain.filter_chain_match === undefined);
  assert.equal(chains.length, 1, 'one catch-all chain');
  return chains[0]!;
};
const customChain = (listener: Node, hostname: string): Node => {
  const found = (listener.filter_chains as Node[]).find((chain) => chain.filter_chain_match?.server_names?.includes(hostname));
  assert.ok(found, `a chain for ${hostname}`);
  return found;
};
const tlsContextOf = (chain: Node): Node => {
  assert.equal(chain.transport_socket.name, 'envoy.transport_sockets.tls');
  return chain.transport_socket.typed_config;
};
const managerOf = (filters: Node[]): Node => filters.find((f: Node) => f.name === 'envoy.filters.network.http_connection_manager')!.typed_config;
const routesOf = (config: Node): Node[] => managerOf(staticListener(config, 'agent_edge').filter_chains[0].filters).route_config.virtual_hosts[0].routes;
const describeIssues = (issues: SchemaIssue[]) => issues.map((issue) => `  ${issue.path}: ${issue.message}`).join('\n');

describe("the edge's HTTPS: envoy/tls-listener.yaml, served by authz", function () {
  let schema: EnvoySchema;
  let config: Node;
  let template: Node;
  let sds: Node;

  before(function () {
    schema = new EnvoySchema(loadEnvoyRoot());
    config = parse(bootstrapYaml);
    template = parse(tlsListenerYaml);
    sds = parse(sdsYaml);
  });

  describe('against Envoy v3 protos', function () {
    it('the bootstrap, tls-listener.yaml and the Listener authz serves of it (no custom domain, one, two), and the SDS file as a DiscoveryResponse carrying a Secret', function () {
      assert.deepEqual(schema.check(BOOTSTRAP, config), []);
      assert.deepEqual(schema.check(LISTENER, template), []);
      for (const hostnames of [[], [SHOP], [SHOP, API]]) {
        const listener = served(hostnames);
        assert.deepEqual(schema.check(LISTENER, listener), [], `${hostnames.length} custom domain(s):\n${describeIssues(schema.check(LISTENER, listener))}`);
        assert.equal(listener.filter_chains.length, hostnames.length + 1);
      }
      const listener = served([SHOP]);
      assert.equal(tlsContextOf(agentDomainChain(listener))['@type'], 'type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext');
      assert.equal(listener.listener_filters[0].typed_config['@type'], 'type.googleapis.com/envoy.extensions.filters.listener.tls_inspector.v3.TlsInspector');
      assert.ok(schema.typeUrls(listener).includes('type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager'), "the plain listener's connection manager in every chain");
      assert.equal(sds.resources[0]['@type'], 'type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret');
    });

    it('the checker reaches inside the served listener: a bad TLS version, a misspelled SDS field, a deprecated path, an ADS source that is not one, a Secret field that does not exist', function () {
      const rejects = (type: string, value: Node, mutate: (copy: Node) => void, pattern: RegExp) => {
        const copy = structuredClone(value);
        mutate(copy);
        const issues = describeIssues(schema.check(type, copy));
        assert.match(issues, pattern);
      };
      const listener = served([SHOP]);
      const agentSecret = (copy: Node) => tlsContextOf(agentDomainChain(copy)).common_tls_context.tls_certificate_sds_secret_configs[0];
      rejects(LISTENER, listener, (copy) => (tlsContextOf(customChain(copy, SHOP)).common_tls_context.tls_params.tls_minimum_protocol_version = 'TLSv1_4'), /"TLSv1_4" is not a value of .*TlsProtocol/);
      rejects(LISTENER, listener, (copy) => {
        const source = agentSecret(copy).sds_config.path_config_source;
        source.watched_directry = source.watched_directory;
        delete source.watched_directory;
      }, /unknown field "watched_directry".*did you mean watched_directory/);
      rejects(LISTENER, listener, (copy) => {
        const sdsConfig = agentSecret(copy).sds_config;
        sdsConfig.path = sdsConfig.path_config_source.path;
        delete sdsConfig.path_config_source;
      }, /path is deprecated/);
      rejects(LISTENER, listener, (copy) => (tlsContextOf(customChain(copy, SHOP)).common_tls_context.tls_certificate_sds_secret_configs[0].sds_config.ads = true), /AggregatedConfigSource must be a mapping/);
      rejects(LISTENER, listener, (copy) => (customChain(copy, SHOP).filter_chain_match.server_name = [SHOP]), /unknown field "server_name".*did you mean server_names/);
      rejects(DISCOVERY_RESPONSE, sds, (copy) => (copy.resources[0].tls_certificate.certificate = copy.resources[0].tls_certificate.certificate_chain), /unknown field "certificate"/);
    });
  });

  describe("what Envoy checks past its protos (test/support/envoy-rules.ts)", function () {
    it("names Envoy's node, which every xDS subscription needs: ADS, LDS and SDS, a file's included (Utility::checkLocalInfo)", function () {
      assert.deepEqual(localInfoProblems(config, [served([SHOP])]), []);
      assert.ok(config.node.id && config.node.cluster, 'a non-empty node id and cluster');
      const { node: _node, ...nameless } = config;
      assert.deepEqual(localInfoProblems(nameless, [served([])]).map((problem) => problem.split(':')[0]), ['ads', 'lds', 'TlsCertificateSdsApi']);
      assert.match(localInfoProblems({ ...config, node: { id: 'agent-edge', cluster: '' } })[0]!, /^ads: node 'id' and 'cluster' are required\. Set it either in 'node' config or via --service-node/);
      // No subscription, nothing to name: the rule is Envoy's, not a style.
      assert.deepEqual(localInfoProblems({ static_resources: { clusters: [] } }), []);
    });

    it('has every gRPC service on a static cluster: ADS on authz_xds, ext_authz and the access log on authz, in the bootstrap and in the served listener', function () {
      const listener = served([SHOP]);
      assert.deepEqual(grpcClusterProblems(config, [listener]), []);
      assert.deepEqual(grpcClusterNames(config.dynamic_resources), ['authz_xds']);
      assert.deepEqual(grpcClusterNames(listener).sort(), ['authz']);
      const copy = structuredClone(config);
      copy.dynamic_resources.ads_config.grpc_services[0].envoy_grpc.cluster_name = 'authz_xdz';
      assert.deepEqual(grpcClusterProblems(copy, [listener]), ["Unknown gRPC client cluster 'authz_xdz'"]);
      const noAuthz = { ...config, static_resources: { ...config.static_resources, clusters: config.static_resources.clusters.filter((c: Node) => c.name !== 'authz') } };
      assert.deepEqual(grpcClusterProblems(noAuthz, [listener]), ["Unknown gRPC client cluster 'authz'"]);
    });

    it('serves one chain per custom domain with exactly one server name, no name twice, and one catch-all: no two chains Envoy would find the same or overlapping', function () {
      for (const hostnames of [[], [SHOP], [SHOP, API], [API, SHOP, 'a.shop.example.com']]) {
        const listener = served(hostnames);
        assert.deepEqual(servedChainProblems(listener), [], hostnames.join(', '));
        assert.deepEqual(filterChainProblems(listener), [], hostnames.join(', '));
        assert.deepEqual(envoyLoadProblems(config, [listener]), [], hostnames.join(', '));
        for (const hostname of hostnames) assert.deepEqual(customChain(listener, hostname).filter_chain_match, { server_names: [hostname] });
      }
      const listener = served([SHOP, API]);
      // What Envoy refuses (filter_chain_manager_impl.cc), and the served shape would not allow.
      const twice = served([SHOP, SHOP]);
      assert.match(filterChainProblems(twice).join('\n'), /error adding listener '0\.0\.0\.0:443': filter chain 'custom_domain:shop\.example\.com' has the same matching rules defined as 'custom_domain:shop\.example\.com'/);
      assert.match(servedChainProblems(twice).join('\n'), /server names in more than one chain: shop\.example\.com/);
      const twoCatchAlls = { ...listener, filter_chains: [...listener.filter_chains, { ...agentDomainChain(listener), name: 'another' }] };
      assert.match(filterChainProblems(twoCatchAlls).join('\n'), /filter chain 'another' has the same matching rules defined as ''/);
      assert.match(servedChainProblems(twoCatchAlls).join('\n'), /2 chains without filter_chain_match/);
      const overlapping = structuredClone(listener);
      customChain(overlapping, API).filter_chain_match.server_names = [API, SHOP.toUpperCase()];
      assert.match(filterChainProblems(overlapping).join('\n'), /multiple filter chains with overlapping matching rules are defined/);
      assert.match(servedChainProblems(overlapping).join('\n'), /matches 2 server names; one/);
      const partial = structuredClone(listener);
      customChain(partial, SHOP).filter_chain_match.server_names = ['sh*p.example.com'];
      assert.match(filterChainProblems(partial).join('\n'), /partial wildcards are not supported in "server_names"/);
    });

    it('reads the SNI its custom chains match on: the TLS inspector is a listener filter of tls-listener.yaml', function () {
      assert.deepEqual(tlsInspectorProblems(served([SHOP])), []);
      assert.deepEqual(template.listener_filters.map((filter: Node) => filter.name), ['envoy.filters.listener.tls_inspector']);
      const { listener_filters: _filters, ...blind } = served([SHOP]);
      assert.match(tlsInspectorProblems(blind).join('\n'), /matches server_names without the envoy\.filters\.listener\.tls_inspector listener filter/);
      const { listener_filters: _none, ...agentDomainOnly } = served([]);
      assert.deepEqual(tlsInspectorProblems(agentDomainOnly), [], 'no server_names, nothing to read');
    });
  });

  describe('the TLS listener', function () {
    it('is agent_edge_tls on 0.0.0.0:443, TLS 1.2 and 1.3 only, ECDHE with AES-GCM or ChaCha20 for 1.2, ALPN h2 then http/1.1, for every domain', function () {
      const listener = served([SHOP]);
      assert.equal(listener.name, 'agent_edge_tls');
      assert.deepEqual(listener.address.socket_address, { address: '0.0.0.0', port_value: 443 });
      const plain = managerOf(staticListener(config, 'agent_edge').filter_chains[0].filters);
      for (const chain of [agentDomainChain(listener), customChain(listener, SHOP)]) {
        const { tls_params: params, alpn_protocols: alpn } = tlsContextOf(chain).common_tls_context;
        assert.equal(params.tls_minimum_protocol_version, 'TLSv1_2');
        assert.equal(params.tls_maximum_protocol_version, 'TLSv1_3');
        assert.ok(params.cipher_suites.length > 0);
        for (const suite of params.cipher_suites as string[]) assert.match(suite, /^ECDHE-(ECDSA|RSA)-(AES(128|256)-GCM-SHA(256|384)|CHACHA20-POLY1305)$/, suite);
        assert.deepEqual(alpn, ['h2', 'http/1.1']);
        assert.equal(tlsContextOf(chain).require_client_certificate, undefined);
        // A handshake is held to the headers' deadline, as the local edge's (client-limits.ts, handshakeTimeout).
        assert.equal(chain.transport_socket_connect_timeout, plain.request_headers_timeout);
      }
    });

    it('has the very connection manager of the plain listener in every chain: the same filters, routes, limits and logs', function () {
      assert.equal(template.filter_chains[0].filters, undefined, 'tls-listener.yaml has no filters of its own to drift');
      const plainFilters = staticListener(config, 'agent_edge').filter_chains[0].filters as Node[];
      const bootstrap = parse(bootstrapYaml);
      const listener = tlsListenerFor(tlsListenerTemplate(parse(tlsListenerYaml), bootstrap), [SHOP, API]);
      for (const chain of listener.filter_chains as Node[]) {
        assert.equal(chain.filters, bootstrap.static_resources.listeners.find((l: Node) => l.name === 'agent_edge').filter_chains[0].filters, "the plain listener's own filters, not a copy");
        assert.deepEqual(chain.filters, plainFilters);
      }
      assert.deepEqual(managerOf(agentDomainChain(listener).filters).http_filters.map((f: Node) => f.name), ['envoy.filters.http.cors', 'envoy.filters.http.ext_authz', 'envoy.filters.http.router']);
      assert.equal(listener.per_connection_buffer_limit_bytes, staticListener(config, 'agent_edge').per_connection_buffer_limit_bytes);
      assert.throws(() => tlsListenerTemplate(parse(tlsListenerYaml), { static_resources: { listeners: [] } }), /no static listener agent_edge with filters to share/);
    });

    it("takes the agent domain's certificate by SDS from a file whose directory is watched, and the file names the Secret it asks for, in that directory", function () {
      const [secretConfig, ...more] = tlsContextOf(agentDomainChain(served([SHOP]))).common_tls_context.tls_certificate_sds_secret_configs as Node[];
      assert.equal(more.length, 0);
      const source = secretConfig!.sds_config.path_config_source;
      assert.equal(secretConfig!.sds_config.resource_api_version, 'V3');
      assert.equal(dirname(source.path), source.watched_directory.path, 'the SDS file is reloaded on a move into its directory');
      const [secret, ...others] = sds.resources as Node[];
      assert.equal(others.length, 0, 'SDS from a file carries one resource (sds_api.cc, validateUpdateSize)');
      assert.equal(secret!.name, secretConfig!.name, 'Envoy refuses a Secret of another name (sds_api.cc, onConfigUpdate)');
      const certificate = secret!.tls_certificate;
      const directory = certificate.watched_directory.path;
      assert.equal(dirname(certificate.certificate_chain.filename), directory);
      assert.equal(dirname(certificate.private_key.filename), directory, 'chain and key are read again together on a move into one directory');
      assert.equal(directory, source.watched_directory.path);
    });

    it("takes each custom domain's certificate by SDS on the same ADS stream, as custom_domain:<hostname>; the rest of its chain is the agent domain's", function () {
      const listener = served([SHOP]);
      const custom = customChain(listener, SHOP);
      assert.deepEqual(tlsContextOf(custom).common_tls_context.tls_certificate_sds_secret_configs, [
        { name: customDomainSecretName(SHOP), sds_config: { ads: {}, resource_api_version: 'V3' } },
      ]);
      assert.equal(customDomainSecretName(SHOP), 'custom_domain:shop.example.com');
      assert.equal(config.dynamic_resources.ads_config.api_type, 'GRPC', 'the bootstrap has the ADS stream those secrets come on');
      const strip = (chain: Node) => {
        const { filter_chain_match: _match, name: _name, ...rest } = structuredClone(chain);
        delete rest.transport_socket.typed_config.common_tls_context.tls_certificate_sds_secret_configs;
        return rest;
      };
      assert.deepEqual(strip(custom), strip(agentDomainChain(listener)));
    });

    it("leaves the other chains' protos alone when a custom domain comes or goes, so Envoy keeps their connections (findExistingFilterChain)", function () {
      const before = served([SHOP]);
      const after = served([SHOP, API]);
      assert.deepEqual(customChain(after, SHOP), customChain(before, SHOP));
      assert.deepEqual(agentDomainChain(after), agentDomainChain(before));
      assert.deepEqual(agentDomainChain(served([])), agentDomainChain(before));
      assert.deepEqual(served([API, SHOP]), after, 'the same set, the same listener');
    });
  });

  describe('EDGE_HTTP_REDIRECT', function () {
    it('is a 308 route to https on 443, for plain HTTP only, without ext_authz, off unless its runtime key says 100', function () {
      const routes = routesOf(config);
      const redirects = routes.filter((route) => route.redirect);
      assert.equal(redirects.length, 1);
      const [redirect] = redirects as [Node];
      assert.deepEqual(redirect.redirect, { https_redirect: true, port_redirect: served([]).address.socket_address.port_value, response_code: 'PERMANENT_REDIRECT' });
      assert.deepEqual(redirect.match.headers, [{ name: 'x-forwarded-proto', string_match: { exact: 'http' } }], 'never on the TLS listener, where x-forwarded-proto is https');
      assert.deepEqual(redirect.match.runtime_fraction, { default_value: { numerator: 0, denominator: 'HUNDRED' }, runtime_key: HTTP_REDIRECT_RUNTIME_KEY });
      assert.equal(redirect.typed_per_filter_config['envoy.filters.http.ext_authz'].disabled, true, 'a redirect spends no Check, rate limit or usage');
      const codes = loadEnvoyRoot().lookupEnum('envoy.config.route.v3.RedirectAction.RedirectResponseCode');
      assert.ok('PERMANENT_REDIRECT' in codes.values);
    });

    it('never takes ACME challenges: their route comes first and forwards as the catch-all does', function () {
      const routes = routesOf(config);
      const acme = routes.findIndex((route) => route.match.prefix === ACME_CHALLENGE_PREFIX);
      assert.ok(acme >= 0 && acme < routes.findIndex((route) => route.redirect), 'before the redirect');
      assert.equal(routes[acme]!.route, routes.at(-1)!.route, 'the same route action (an alias)');
    });

    it('is turned on by a runtime layer passed with --config-yaml, which merges into a bootstrap Envoy accepts', function () {
      assert.deepEqual(envoyRedirectArgs(false), []);
      const [flag, overlay, ...rest] = envoyRedirectArgs(true);
      assert.equal(flag, '--config-yaml');
      assert.equal(rest.length, 0);
      const merged = { ...config, ...JSON.parse(overlay!) };
      assert.equal(config.layered_runtime, undefined, 'envoy.yaml has no runtime of its own for the overlay to collide with');
      assert.deepEqual(schema.check(BOOTSTRAP, merged), []);
      assert.equal(merged.layered_runtime.layers[0].static_layer[HTTP_REDIRECT_RUNTIME_KEY], 100, 'an integer is read as a percentage (runtime_impl.cc, SnapshotImpl::featureEnabled)');
    });
  });

  describe('the local edge', function () {
    it("offers tls-listener.yaml's TLS minimum and TLS 1.2 cipher list", function () {
      const params = tlsContextOf(template.filter_chains[0]).common_tls_context.tls_params;
      assert.equal(TLS_MIN_VERSION, params.tls_minimum_protocol_version.replace('_', '.'));
      assert.deepEqual([...TLS12_CIPHER_SUITES], params.cipher_suites);
    });

    it('takes EDGE_TLS_CERT_FILE and EDGE_TLS_KEY_FILE together or not at all, EDGE_HTTPS_PORT (7443), and EDGE_HTTP_REDIRECT only with them', function () {
      const base = { REDIS_URL: 'redis://127.0.0.1:6379' };
      assert.equal(loadLocalEdgeConfig(base).tls, undefined);
      assert.equal(loadLocalEdgeConfig(base).httpRedirect, false);
      const files = { EDGE_TLS_CERT_FILE: '/etc/tls/tls.crt', EDGE_TLS_KEY_FILE: '/etc/tls/tls.key' };
      assert.deepEqual(loadLocalEdgeConfig({ ...base, ...files }).tls, { certFile: '/etc/tls/tls.crt', keyFile: '/etc/tls/tls.key', port: 7443 });
      assert.equal(loadLocalEdgeConfig({ ...base, ...files, EDGE_HTTPS_PORT: '8443', EDGE_HTTP_REDIRECT: 'true' }).tls?.port, 8443);
      assert.throws(() => loadLocalEdgeConfig({ ...base, EDGE_TLS_CERT_FILE: '/etc/tls/tls.crt' }), /EDGE_TLS_CERT_FILE and EDGE_TLS_KEY_FILE: set both .* got only EDGE_TLS_CERT_FILE/);
      assert.throws(() => loadLocalEdgeConfig({ ...base, EDGE_TLS_KEY_FILE: '/etc/tls/tls.key' }), /got only EDGE_TLS_KEY_FILE/);
      assert.throws(() => loadLocalEdgeConfig({ ...base, EDGE_HTTP_REDIRECT: 'true' }), /EDGE_HTTP_REDIRECT: true sends plain HTTP to https, which needs/);
      assert.throws(() => loadLocalEdgeConfig({ ...base, ...files, EDGE_HTTP_REDIRECT: 'yes' }), /EDGE_HTTP_REDIRECT: expected true or false/);
      assert.throws(() => loadLocalEdgeConfig({ ...base, ...files, EDGE_HTTPS_PORT: '7080' }), /EDGE_HTTPS_PORT: must differ from EDGE_PORT/);
    });
  });

  describe('npm run up with an installed Envoy', function () {
    const files = { certFile: '/srv/.data/tls/tls.crt', keyFile: '/srv/.data/tls/tls.key', sdsFile: '/srv/.data/envoy-tls/sds.yaml', httpsPort: 7443 };

    it('renders the redirect and the served listener on EDGE_HTTPS_PORT, an SDS file naming its certificate, and authz_xds at its socket: only those values change, and all still validate', function () {
      const xdsSocket = upXdsSocket({}, '/srv/.data');
      assert.equal(xdsSocket, '/srv/.data/authz-xds.sock');
      const rendered = envoyTlsFor(envoyBootstrapFor(bootstrapYaml, { path: '/srv/.data/authz.sock' }, xdsSocket), tlsListenerYaml, sdsYaml, files);
      const bootstrap = parse(rendered.bootstrap);
      const tlsListener = parse(rendered.tlsListener);
      const renderedSds = parse(rendered.sds);
      assert.deepEqual(schema.check(BOOTSTRAP, bootstrap), []);
      assert.deepEqual(schema.check(LISTENER, tlsListener), []);
      assert.deepEqual(schema.check(DISCOVERY_RESPONSE, renderedSds), []);
      const listener = tlsListenerFor(tlsListenerTemplate(tlsListener, bootstrap), [SHOP]);
      assert.deepEqual(schema.check(LISTENER, listener), []);
      assert.deepEqual(envoyLoadProblems(bootstrap, [listener]), []);

      const expected = structuredClone(config);
      routesOf(expected).find((route) => route.redirect)!.redirect.port_redirect = 7443;
      const pipe = (cfg: Node, name: string) => cfg.static_resources.clusters.find((c: Node) => c.name === name).load_assignment.endpoints[0].lb_endpoints[0].endpoint.address.pipe;
      assert.equal(pipe(expected, 'authz_xds').path, AUTHZ_XDS_SOCKET_PATH);
      pipe(expected, 'authz').path = '/srv/.data/authz.sock';
      pipe(expected, 'authz_xds').path = xdsSocket;
      assert.deepEqual(bootstrap, expected);
      const expectedListener = structuredClone(template);
      expectedListener.address.socket_address.port_value = 7443;
      const source = tlsContextOf(expectedListener.filter_chains[0]).common_tls_context.tls_certificate_sds_secret_configs[0].sds_config.path_config_source;
      source.path = files.sdsFile;
      source.watched_directory.path = '/srv/.data/envoy-tls';
      assert.deepEqual(tlsListener, expectedListener);
      assert.deepEqual(renderedSds.resources[0].tls_certificate, {
        certificate_chain: { filename: files.certFile },
        private_key: { filename: files.keyFile },
        watched_directory: { path: '/srv/.data/tls' },
      });
      // Files in two directories: Envoy then watches each file's own (sds_api.cc, onConfigUpdate).
      const apart = parse(envoyTlsFor(bootstrapYaml, tlsListenerYaml, sdsYaml, { ...files, keyFile: '/srv/keys/tls.key' }).sds);
      assert.equal(apart.resources[0].tls_certificate.watched_directory, undefined);
      assert.throws(() => upXdsSocket({}, `/${'d'.repeat(100)}`), /AUTHZ_XDS_SOCKET/);
      assert.equal(upXdsSocket({ AUTHZ_XDS_SOCKET: '/run/x.sock' }, '/srv/.data'), '/run/x.sock');
    });

    it("gives the edge the operator's certificate when named, and makes agent URLs https on EDGE_HTTPS_PORT unless told otherwise", function () {
      const own = upEdgeTls({ EDGE_TLS_CERT_FILE: '/etc/tls/tls.crt', EDGE_TLS_KEY_FILE: '/etc/tls/tls.key' }, '/nonexistent');
      assert.equal(own.caFile, null);
      assert.deepEqual(own.env, { EDGE_TLS_CERT_FILE: '/etc/tls/tls.crt', EDGE_TLS_KEY_FILE: '/etc/tls/tls.key', EDGE_HTTPS_PORT: '7443', AGENT_URL_SCHEME: 'https', AGENT_URL_PORT: '7443' });
      const plain = upEdgeTls({ EDGE_TLS_CERT_FILE: '/c', EDGE_TLS_KEY_FILE: '/k', AGENT_URL_SCHEME: 'http' }, '/nonexistent');
      assert.deepEqual([plain.env.AGENT_URL_SCHEME, plain.env.AGENT_URL_PORT], ['http', '7080']);
      assert.equal(upEdgeTls({ EDGE_TLS_CERT_FILE: '/c', EDGE_TLS_KEY_FILE: '/k', EDGE_HTTPS_PORT: '443', AGENT_URL_PORT: '' }, '/x').env.AGENT_URL_PORT, '', 'an operator omitting the port');
    });
  });
});
