import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { applyAllowedMutations, verdictOf } from '../envoy/local-edge/authz-answer.js';
import { buildCheckRequest } from '../envoy/local-edge/check-request.js';
import { sanitiseDownstreamHeaders } from '../envoy/local-edge/downstream-headers.js';
import { AUTHZ_ALLOWED_HEADERS, AUTHZ_SOCKET_PATH, EDGE_REPLIES, EXT_AUTHZ_TIMEOUT_MS } from '../envoy/local-edge/envoy-parity.js';
import { loadLocalEdgeConfig } from '../envoy/local-edge/config.js';
import { CORS_POLICY, corsFor, corsOutcome } from '../envoy/local-edge/cors.js';
import { parseUpstream } from '../envoy/local-edge/forward.js';

/** The local edge's copy of envoy.yaml's choices, and its pure request/answer handling. */
describe('local edge parity with envoy.yaml', () => {
  const bootstrap = parse(readFileSync(new URL('../envoy/envoy.yaml', import.meta.url), 'utf8'));
  const manager = bootstrap.static_resources.listeners[0].filter_chains[0].filters[0].typed_config;
  const extAuthz = manager.http_filters.find((filter: { name: string }) => filter.name === 'envoy.filters.http.ext_authz').typed_config;

  it('uses the ext_authz timeout and allowed_headers of envoy.yaml', () => {
    assert.equal(`${EXT_AUTHZ_TIMEOUT_MS / 1000}s`, extAuthz.grpc_service.timeout);
    assert.deepEqual([...AUTHZ_ALLOWED_HEADERS], extAuthz.allowed_headers.patterns.map((pattern: { exact: string }) => pattern.exact));
  });

  it("reaches authz where envoy.yaml's authz cluster does by default, its Unix socket, and takes unix:/path or host:port", () => {
    const authz = bootstrap.static_resources.clusters.find((cluster: { name: string }) => cluster.name === 'authz');
    const { path } = authz.load_assignment.endpoints[0].lb_endpoints[0].endpoint.address.pipe;
    assert.equal(AUTHZ_SOCKET_PATH, path);
    assert.equal(loadLocalEdgeConfig({ REDIS_URL: 'redis://127.0.0.1:6379' }).authzAddress, `unix:${path}`);
    for (const address of ['unix:/tmp/authz-1/authz.sock', '127.0.0.1:7091', '[::1]:7091']) {
      assert.equal(loadLocalEdgeConfig({ REDIS_URL: 'redis://127.0.0.1:6379', AUTHZ_ADDRESS: address }).authzAddress, address);
    }
    for (const address of ['unix:authz.sock', '127.0.0.1', 'localhost:70910']) {
      assert.throws(() => loadLocalEdgeConfig({ REDIS_URL: 'redis://127.0.0.1:6379', AUTHZ_ADDRESS: address }), /AUTHZ_ADDRESS: authz's gRPC server/, address);
    }
  });

  it('answers its own failures with the bodies of envoy.yaml local_reply_config', () => {
    const bodies = manager.local_reply_config.mappers.map((mapper: { body: { inline_string: string } }) => mapper.body.inline_string);
    assert.ok(bodies.includes(EDGE_REPLIES.badGateway));
    assert.ok(bodies.includes(EDGE_REPLIES.noHost));
  });

  it("answers CORS as envoy.yaml's cors filter and policy: before ext_authz, for the same origin by default, with the same headers", () => {
    const names = manager.http_filters.map((filter: { name: string }) => filter.name);
    assert.ok(names.indexOf('envoy.filters.http.cors') < names.indexOf('envoy.filters.http.ext_authz'), 'preflights are answered before the key check');
    const policy = manager.route_config.virtual_hosts[0].typed_per_filter_config['envoy.filters.http.cors'];
    assert.deepEqual(
      { allowMethods: policy.allow_methods, allowHeaders: policy.allow_headers, exposeHeaders: policy.expose_headers, maxAge: policy.max_age },
      { ...CORS_POLICY },
    );
    const { consoleOrigin } = loadLocalEdgeConfig({ REDIS_URL: 'redis://127.0.0.1:6379' });
    assert.deepEqual(policy.allow_origin_string_match, [{ exact: consoleOrigin }]);
    assert.throws(() => loadLocalEdgeConfig({ REDIS_URL: 'redis://127.0.0.1:6379', CONSOLE_ORIGIN: 'http://127.0.0.1:7070/' }), /CONSOLE_ORIGIN/);
  });

  it('tells a preflight (OPTIONS with Access-Control-Request-Method) from the console apart from every other request', () => {
    const cors = corsFor('http://console.test');
    const origin = 'http://console.test';
    assert.equal(corsOutcome(cors, 'OPTIONS', { origin, 'access-control-request-method': 'POST' })?.kind, 'preflight');
    assert.equal(corsOutcome(cors, 'OPTIONS', { origin, 'access-control-request-method': '' })?.kind, 'actual', 'an empty method is no preflight (cors_filter.cc)');
    assert.equal(corsOutcome(cors, 'OPTIONS', { origin })?.kind, 'actual');
    assert.equal(corsOutcome(cors, 'POST', { origin, 'access-control-request-method': 'POST' })?.kind, 'actual');
    assert.equal(corsOutcome(cors, 'OPTIONS', { origin: 'http://console.test:8080', 'access-control-request-method': 'POST' }), undefined, 'an exact match, as the policy\'s string matcher');
    assert.equal(corsOutcome(cors, 'GET', {}), undefined);
    assert.equal(corsOutcome(corsFor(undefined), 'OPTIONS', { origin, 'access-control-request-method': 'POST' }), undefined);
  });

  it('shows authz only the allowed headers, after dropping what a client may not set', () => {
    const headers = sanitiseDownstreamHeaders(
      { host: 'a.agents.localhost:7080', authorization: 'Bearer agk_x', cookie: 'secret', 'x-envoy-external-address': '1.2.3.4', connection: 'keep-alive, x-drop', 'x-drop': 'y' },
      '127.0.0.2',
      'req-1',
    );
    assert.equal(headers['x-drop'], undefined);
    assert.equal(headers.connection, undefined);
    const request = buildCheckRequest({
      requestId: 'req-1', method: 'GET', host: 'a.agents.localhost:7080', path: '/x?y=1', headers,
      peer: { address: '127.0.0.2', port: 5555 }, local: { address: '127.0.0.1', port: 7080 },
    });
    assert.deepEqual(request.attributes.request.http.headers, { authorization: 'Bearer agk_x', 'x-envoy-external-address': '127.0.0.2', 'x-request-id': 'req-1' });
    assert.equal(request.attributes.source.address.socket_address.address, '127.0.0.2');
    assert.equal(request.attributes.request.http.host, 'a.agents.localhost:7080');
  });

  it('applies ok_response header actions as Envoy does, then removes headers', () => {
    const verdict = verdictOf({
      status: { code: 0 },
      ok_response: {
        headers: [
          { header: { key: 'x-set', value: 'new' }, append_action: 'OVERWRITE_IF_EXISTS_OR_ADD' },
          { header: { key: 'x-append', value: 'b' }, append_action: 'APPEND_IF_EXISTS_OR_ADD' },
          { header: { key: 'x-absent', value: 'yes' }, append_action: 'ADD_IF_ABSENT' },
          { header: { key: 'x-keep', value: 'no' }, append_action: 'ADD_IF_ABSENT' },
          { header: { key: 'x-missing', value: 'no' }, append_action: 'OVERWRITE_IF_EXISTS' },
        ],
        headers_to_remove: ['Authorization'],
      },
      dynamic_metadata: { fields: { upstream: { stringValue: '10.0.0.1:8080' } } },
    });
    assert.equal(verdict.kind, 'allow');
    if (verdict.kind !== 'allow') return;
    assert.equal(verdict.upstream, '10.0.0.1:8080');
    assert.deepEqual(applyAllowedMutations({ 'x-set': 'old', 'x-append': 'a', 'x-keep': 'kept', authorization: 'Bearer agk_x' }, verdict), {
      'x-set': 'new', 'x-append': ['a', 'b'], 'x-absent': 'yes', 'x-keep': 'kept',
    });
  });

  it('reads which version authz allowed from its metadata as the access log does: the canary only when exactly `canary`', () => {
    const allowed = (fields: Record<string, { stringValue: string }>) =>
      verdictOf({ status: { code: 0 }, ok_response: {}, dynamic_metadata: { fields: { upstream: { stringValue: '10.0.0.1:8080' }, agent_id: { stringValue: 'agt_v' }, ...fields } } });
    assert.deepEqual(allowed({ version: { stringValue: 'canary' } }), { kind: 'allow', headerMutations: [], headersToRemove: [], upstream: '10.0.0.1:8080', agentId: 'agt_v', canary: true, trace: null });
    for (const version of ['stable', '', 'Canary', 'beta']) assert.equal((allowed({ version: { stringValue: version } }) as { canary: boolean }).canary, false, version);
    assert.equal((allowed({}) as { canary: boolean }).canary, false, 'no version (an authz before canaries): stable');
  });

  it('reads a denial status from its enum name and falls back to 403 as Envoy does', () => {
    assert.deepEqual(verdictOf({ status: { code: 7 }, denied_response: { status: { code: 'TooManyRequests' }, headers: [], body: 'x' } }), { kind: 'deny', status: 429, headers: [], body: 'x' });
    assert.equal((verdictOf({ status: { code: 7 } }) as { status: number }).status, 403);
  });

  it('accepts only ip:port upstreams', () => {
    assert.deepEqual(parseUpstream('10.0.0.1:8080'), { host: '10.0.0.1', port: 8080 });
    assert.deepEqual(parseUpstream('[fd00::1]:8080'), { host: 'fd00::1', port: 8080 });
    for (const bad of ['', '10.0.0.1', '10.0.0.1:0', '10.0.0.1:99999', ':80']) assert.equal(parseUpstream(bad), null, bad);
  });
});
