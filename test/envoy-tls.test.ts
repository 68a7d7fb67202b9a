import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { parse } from 'yaml';
import { loadEnvoyRoot } from '../proto/load.js';
import { ACME_CHALLENGE_PREFIX, HTTP_REDIRECT_RUNTIME_KEY } from '../envoy/local-edge/envoy-parity.js';
import { loadLocalEdgeConfig } from '../envoy/local-edge/config.js';
import { TLS_MIN_VERSION, TLS12_CIPHER_SUITES } from '../envoy/local-edge/tls-policy.js';
import { envoyRedirectArgs, envoyTlsFor, upEdgeTls } from '../scripts/lib/up-edge-tls.js';
import { EnvoySchema, type SchemaIssue } from './support/envoy-schema.js';

/**
 * envoy.yaml's HTTPS: the TLS listener and the SDS file it reads its certificate from,
 * against Envoy's own protos; the redirect route; the local edge's copy of both; and what
 * `npm run up` renders of them for an installed Envoy.
 */

type Node = Record<string, any>;
const BOOTSTRAP = 'envoy.config.bootstrap.v3.Bootstrap';
const DISCOVERY_RESPONSE = 'envoy.service.discovery.v3.DiscoveryResponse';
const bootstrapYaml = readFileSync(new URL('../envoy/envoy.yaml', import.meta.url), 'utf8');
const sdsYaml = readFileSync(new URL('../envoy/tls-sds.yaml', import.meta.url), 'utf8');

const listener = (config: Node, name: string): Node => {
  const found = (config.static_resources.listeners as Node[]).find((l) => l.name === name);
  assert.ok(found, `listener ${name}`);
  return found;
};
const managerOf = (l: Node): Node => l.filter_chains[0].filters.find((f: Node) => f.name === 'envoy.filters.network.http_connection_manager').typed_config;
const tlsContextOf = (config: Node): Node => {
  const socket = listener(config, 'agent_edge_tls').filter_chains[0].transport_socket;
  assert.equal(socket.name, 'envoy.transport_sockets.tls');
  return socket.typed_config;
};
const routesOf = (config: Node): Node[] => managerOf(listener(config, 'agent_edge')).route_config.virtual_hosts[0].routes;
const describeIssues = (issues: SchemaIssue[]) => issues.map((issue) => `  ${issue.path}: ${issue.message}`).join('\n');

describe("envoy.yaml's HTTPS", function () {
  let schema: EnvoySchema;
  let config: Node;
  let sds: Node;

  before(function () {
    schema = new EnvoySchema(loadEnvoyRoot());
    config = parse(bootstrapYaml);
    sds = parse(sdsYaml);
  });

  describe('against Envoy v3 protos', function () {
    it('the bootstrap with its TLS listener, and the SDS file as a DiscoveryResponse carrying a Secret', function () {
      assert.deepEqual(schema.check(BOOTSTRAP, config), []);
      assert.deepEqual(schema.check(DISCOVERY_RESPONSE, sds), []);
      assert.equal(tlsContextOf(config)['@type'], 'type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext');
      assert.equal(sds.resources[0]['@type'], 'type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret');
    });

    it('the checker reaches inside both: a bad TLS version, a misspelled SDS field, a deprecated path, a Secret field that does not exist', function () {
      const rejects = (type: string, value: Node, mutate: (copy: Node) => void, pattern: RegExp) => {
        const copy = structuredClone(value);
        mutate(copy);
        const issues = describeIssues(schema.check(type, copy));
        assert.match(issues, pattern);
      };
      rejects(BOOTSTRAP, config, (copy) => (tlsContextOf(copy).common_tls_context.tls_params.tls_minimum_protocol_version = 'TLSv1_4'), /"TLSv1_4" is not a value of .*TlsProtocol/);
      rejects(BOOTSTRAP, config, (copy) => {
        const source = tlsContextOf(copy).common_tls_context.tls_certificate_sds_secret_configs[0].sds_config.path_config_source;
        source.watched_directry = source.watched_directory;
        delete source.watched_directory;
      }, /unknown field "watched_directry".*did you mean watched_directory/);
      rejects(BOOTSTRAP, config, (copy) => {
        const sdsConfig = tlsContextOf(copy).common_tls_context.tls_certificate_sds_secret_configs[0].sds_config;
        sdsConfig.path = sdsConfig.path_config_source.path;
        delete sdsConfig.path_config_source;
      }, /path is deprecated/);
      rejects(DISCOVERY_RESPONSE, sds, (copy) => (copy.resources[0].tls_certificate.certificate = copy.resources[0].tls_certificate.certificate_chain), /unknown field "certificate"/);
    });
  });

  describe('the TLS listener', function () {
    it('listens on 0.0.0.0:443 with TLS 1.2 and 1.3 only, ECDHE with AES-GCM or ChaCha20 for 1.2, ALPN h2 then http/1.1', function () {
      assert.deepEqual(listener(config, 'agent_edge_tls').address.socket_address, { address: '0.0.0.0', port_value: 443 });
      const { tls_params: params, alpn_protocols: alpn } = tlsContextOf(config).common_tls_context;
      assert.equal(params.tls_minimum_protocol_version, 'TLSv1_2');
      assert.equal(params.tls_maximum_protocol_version, 'TLSv1_3');
      assert.ok(params.cipher_suites.length > 0);
      for (const suite of params.cipher_suites as string[]) assert.match(suite, /^ECDHE-(ECDSA|RSA)-(AES(128|256)-GCM-SHA(256|384)|CHACHA20-POLY1305)$/, suite);
      assert.deepEqual(alpn, ['h2', 'http/1.1']);
      assert.equal(tlsContextOf(config).require_client_certificate, undefined);
      // A handshake is held to the headers' deadline, as the local edge's (client-limits.ts, handshakeTimeout).
      assert.equal(listener(config, 'agent_edge_tls').filter_chains[0].transport_socket_connect_timeout, managerOf(listener(config, 'agent_edge')).request_headers_timeout);
    });

    it('has the very connection manager of the plain listener: the same filters, routes, limits and logs', function () {
      const plain = managerOf(listener(config, 'agent_edge'));
      const tls = managerOf(listener(config, 'agent_edge_tls'));
      assert.equal(tls, plain, 'one YAML node (an alias), not a copy that could drift');
      assert.deepEqual(tls.http_filters.map((f: Node) => f.name), ['envoy.filters.http.cors', 'envoy.filters.http.ext_authz', 'envoy.filters.http.router']);
      assert.equal(listener(config, 'agent_edge_tls').per_connection_buffer_limit_bytes, listener(config, 'agent_edge').per_connection_buffer_limit_bytes);
    });

    it('takes its certificate by SDS from a file whose directory is watched, and the file names the Secret it asks for, in that directory', function () {
      const [secretConfig, ...more] = tlsContextOf(config).common_tls_context.tls_certificate_sds_secret_configs as Node[];
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
  });

  describe('EDGE_HTTP_REDIRECT', function () {
    it('is a 308 route to https on 443, for plain HTTP only, without ext_authz, off unless its runtime key says 100', function () {
      const routes = routesOf(config);
      const redirects = routes.filter((route) => route.redirect);
      assert.equal(redirects.length, 1);
      const [redirect] = redirects as [Node];
      assert.deepEqual(redirect.redirect, { https_redirect: true, port_redirect: 443, response_code: 'PERMANENT_REDIRECT' });
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
    it("offers envoy.yaml's TLS minimum and TLS 1.2 cipher list", function () {
      const params = tlsContextOf(config).common_tls_context.tls_params;
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
    it('renders the TLS listener on EDGE_HTTPS_PORT and an SDS file naming its certificate: only those values change, and both still validate', function () {
      const files = { certFile: '/srv/.data/tls/tls.crt', keyFile: '/srv/.data/tls/tls.key', sdsFile: '/srv/.data/envoy-tls/sds.yaml', httpsPort: 7443 };
      const rendered = envoyTlsFor(bootstrapYaml, sdsYaml, files);
      const bootstrap = parse(rendered.bootstrap);
      const renderedSds = parse(rendered.sds);
      assert.deepEqual(schema.check(BOOTSTRAP, bootstrap), []);
      assert.deepEqual(schema.check(DISCOVERY_RESPONSE, renderedSds), []);

      const expected = structuredClone(config);
      listener(expected, 'agent_edge_tls').address.socket_address.port_value = 7443;
      routesOf(expected).find((route) => route.redirect)!.redirect.port_redirect = 7443;
      const source = tlsContextOf(expected).common_tls_context.tls_certificate_sds_secret_configs[0].sds_config.path_config_source;
      source.path = files.sdsFile;
      source.watched_directory.path = '/srv/.data/envoy-tls';
      assert.deepEqual(bootstrap, expected);
      assert.deepEqual(renderedSds.resources[0].tls_certificate, {
        certificate_chain: { filename: files.certFile },
        private_key: { filename: files.keyFile },
        watched_directory: { path: '/srv/.data/tls' },
      });
      // Files in two directories: Envoy then watches each file's own (sds_api.cc, onConfigUpdate).
      const apart = parse(envoyTlsFor(bootstrapYaml, sdsYaml, { ...files, keyFile: '/srv/keys/tls.key' }).sds);
      assert.equal(apart.resources[0].tls_certificate.watched_directory, undefined);
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
