import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createRequire } from 'node:module';
import { X509Certificate } from 'node:crypto';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { credentials, loadPackageDefinition, type ClientDuplexStream } from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import type { Redis } from 'ioredis';
import { pino } from 'pino';
import { parse } from 'yaml';
import { EdgeProjection } from '../control/edge/projection.js';
import { edgeKeyNames } from '../contract/edge-keys.js';
import { GRPC_LOADER_OPTIONS, loadEnvoyRoot } from '../proto/load.js';
import { LISTENER_TYPE_URL, SECRET_TYPE_URL, XDS_PROTO_FILES } from '../authz/xds/ads-server.js';
import { readXdsTemplate, startEdgeXds, type EdgeXds } from '../authz/xds/edge-xds.js';
import { customDomainSecretName, tlsListenerFor, tlsListenerTemplate } from '../authz/xds/tls-listener.js';
import { ensureLocalTls } from '../scripts/lib/local-tls.js';
import { connectTestRedis } from './support/edge-authz.js';
import { EnvoySchema } from './support/envoy-schema.js';

/**
 * authz's xDS server as Envoy uses it: one ADS stream over the Unix socket, the HTTPS
 * listener by LDS and each custom domain's certificate by SDS, on real Redis with the
 * control API's own projection writes. The client below speaks the protocol's rules as
 * Envoy's gRPC mux does (envoy source/extensions/config_subscription/grpc/grpc_mux_impl.cc,
 * GrpcMuxImpl::onDiscoveryResponse: every response is answered with its nonce; an ACK
 * carries its version, a NACK the previous one and error_detail).
 */

type Node = Record<string, any>;
interface Response {
  version_info: string;
  type_url: string;
  nonce: string;
  resources: { type_url: string; value: Buffer }[];
}

const root = loadEnvoyRoot(XDS_PROTO_FILES);
const Listener = root.lookupType('envoy.config.listener.v3.Listener');
const FilterChain = root.lookupType('envoy.config.listener.v3.FilterChain');
const Secret = root.lookupType('envoy.extensions.transport_sockets.tls.v3.Secret');
const DownstreamTlsContext = root.lookupType('envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext');
const HttpConnectionManager = root.lookupType('envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager');
const toJson = { enums: String, longs: Number, defaults: false, arrays: true } as const;

const listenerYaml = parse(readFileSync(new URL('../envoy/tls-listener.yaml', import.meta.url), 'utf8'));
const envoyYaml = parse(readFileSync(new URL('../envoy/envoy.yaml', import.meta.url), 'utf8'));

/** An ADS stream as Envoy holds one: responses queue until the test takes them. */
class EnvoyStream {
  readonly #queue: Response[] = [];
  readonly #waiting: ((response: Response) => void)[] = [];
  constructor(readonly call: ClientDuplexStream<Node, Response>) {
    call.on('data', (response: Response) => {
      const waiter = this.#waiting.shift();
      if (waiter) waiter(response);
      else this.#queue.push(response);
    });
    call.on('error', () => undefined);
  }

  request(typeUrl: string, names: string[], ack?: Response, nack?: string): void {
    this.call.write({
      node: { id: 'agent-edge', cluster: 'agent-platform-edge' },
      type_url: typeUrl,
      resource_names: names,
      version_info: ack && !nack ? ack.version_info : '',
      response_nonce: ack?.nonce ?? '',
      ...(nack ? { error_detail: { code: 3, message: nack } } : {}),
    });
  }

  next(what: string, timeoutMs = 5_000): Promise<Response> {
    const queued = this.#queue.shift();
    if (queued) return Promise.resolve(queued);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no response: ${what}`)), timeoutMs);
      this.#waiting.push((response) => {
        clearTimeout(timer);
        resolve(response);
      });
    });
  }

  /** Nothing more arrives within `ms`: authz sends a type again only when it changed. */
  async quiet(ms: number): Promise<Response | undefined> {
    await new Promise((resolve) => setTimeout(resolve, ms));
    return this.#queue.shift();
  }
}

const listenerOf = (response: Response): Node => {
  assert.equal(response.type_url, LISTENER_TYPE_URL);
  assert.equal(response.resources.length, 1);
  assert.equal(response.resources[0]!.type_url, LISTENER_TYPE_URL);
  return Listener.toObject(Listener.decode(response.resources[0]!.value), toJson);
};
const tlsOf = (chain: Node): Node => DownstreamTlsContext.toObject(DownstreamTlsContext.decode(chain.transport_socket.typed_config.value), toJson);
const serverNames = (listener: Node) => (listener.filter_chains as Node[]).map((chain) => chain.filter_chain_match?.server_names ?? []);

describe("authz's xDS server (Envoy's HTTPS listener and custom domains' certificates)", function () {
  this.timeout(30_000);
  let redis: Redis;
  let projection: EdgeProjection;
  let xds: EdgeXds;
  let dir: string;
  let client: any;
  let stream: EnvoyStream;
  const logs: { msg: string; [field: string]: unknown }[] = [];
  let pairs = 0;
  /** A fresh certificate for *.example.test from the same CA. */
  const mint = () => {
    const pairDir = join(dir, `pair-${++pairs}`);
    mkdirSync(pairDir);
    for (const file of ['ca.crt', 'ca.key']) copyFileSync(join(dir, 'ca', file), join(pairDir, file));
    const files = ensureLocalTls({ dir: pairDir, domain: 'example.test' });
    return { chain: readFileSync(files.certFile, 'utf8'), key: readFileSync(files.keyFile, 'utf8') };
  };
  const serialOf = (pem: string) => new X509Certificate(pem).serialNumber;

  before(async function () {
    dir = mkdtempSync(join(tmpdir(), 'authz-xds-'));
    ensureLocalTls({ dir: join(dir, 'ca'), domain: 'example.test' });
    redis = connectTestRedis();
    projection = new EdgeProjection(redis, redis.options.keyPrefix);
    const logger = pino({ level: 'info' }, { write: (line: string) => void logs.push(JSON.parse(line)) });
    const socketPath = join(dir, 'xds.sock');
    const xdsConfig = { socketPath, tlsListenerFile: new URL('../envoy/tls-listener.yaml', import.meta.url).pathname, envoyConfigFile: new URL('../envoy/envoy.yaml', import.meta.url).pathname };
    xds = await startEdgeXds(xdsConfig, readXdsTemplate(xdsConfig), { redis, keyPrefix: redis.options.keyPrefix!, logger });
    const definition = loadSync('envoy/service/discovery/v3/ads.proto', { ...GRPC_LOADER_OPTIONS });
    const Ads = (loadPackageDefinition(definition) as any).envoy.service.discovery.v3.AggregatedDiscoveryService;
    client = new Ads(`unix:${socketPath}`, credentials.createInsecure());
    stream = new EnvoyStream(client.StreamAggregatedResources());
  });

  after(async function () {
    stream?.call.end();
    client?.close();
    await xds?.close();
    await redis?.del(edgeKeyNames.certificates, edgeKeyNames.domainHosts);
    redis?.disconnect();
    rmSync(dir, { recursive: true, force: true });
  });

  let listenerAck: Response;

  it('serves the HTTPS listener of envoy/tls-listener.yaml with the plain listener\'s connection manager, fields intact on the wire', async function () {
    stream.request(LISTENER_TYPE_URL, []);
    listenerAck = await stream.next('the first listener');
    const listener = listenerOf(listenerAck);
    stream.request(LISTENER_TYPE_URL, [], listenerAck);

    assert.equal(listener.name, 'agent_edge_tls');
    assert.equal(listener.address.socket_address.port_value, 443);
    assert.equal(listener.per_connection_buffer_limit_bytes.value, 32768);
    assert.deepEqual(listener.listener_filters.map((filter: Node) => filter.name), ['envoy.filters.listener.tls_inspector']);
    assert.deepEqual(serverNames(listener), [[]], 'no custom domain yet: the agent domain\'s chain alone');
    const [chain] = listener.filter_chains;
    assert.equal(chain.transport_socket_connect_timeout.seconds, 10, 'a Duration written "10s" reaches the wire');
    const tls = tlsOf(chain);
    assert.equal(tls.common_tls_context.tls_params.tls_minimum_protocol_version, 'TLSv1_2');
    assert.equal(tls.common_tls_context.tls_params.cipher_suites.length, 6);
    assert.deepEqual(tls.common_tls_context.alpn_protocols, ['h2', 'http/1.1']);
    assert.deepEqual(tls.common_tls_context.tls_certificate_sds_secret_configs.map((config: Node) => config.name), ['agent_domain']);
    const manager = HttpConnectionManager.toObject(HttpConnectionManager.decode(chain.filters[0].typed_config.value), toJson);
    const plain = envoyYaml.static_resources.listeners.find((l: Node) => l.name === 'agent_edge').filter_chains[0].filters[0].typed_config;
    assert.equal(manager.stat_prefix, plain.stat_prefix);
    assert.deepEqual(manager.http_filters.map((filter: Node) => filter.name), plain.http_filters.map((filter: Node) => filter.name));
    assert.equal(manager.route_config.virtual_hosts[0].routes.length, plain.route_config.virtual_hosts[0].routes.length);
    assert.equal(await stream.quiet(200), undefined, 'an ACK is not answered');
  });

  it('what it builds passes the strict check against Envoy\'s Listener proto, with and without custom domains', function () {
    const schema = new EnvoySchema(root);
    const template = tlsListenerTemplate(listenerYaml, envoyYaml);
    for (const hostnames of [[], ['shop.example.test', 'api.example.test']]) {
      assert.deepEqual(schema.check('envoy.config.listener.v3.Listener', tlsListenerFor(template, hostnames)), [], hostnames.join(', '));
    }
  });

  let firstSerial: string;
  let secretAck: Response;

  it('adds a chain matched by SNI for a domain given a certificate, leaving the agent domain\'s chain byte for byte as it was', async function () {
    const before = listenerOf(listenerAck);
    const certificate = mint();
    firstSerial = serialOf(certificate.chain);
    await projection.putDomain('shop', 'shop.example.test');
    await projection.putCertificate('shop.example.test', certificate);

    const update = await stream.next('the listener with the new chain');
    assert.notEqual(update.version_info, listenerAck.version_info);
    const listener = listenerOf(update);
    stream.request(LISTENER_TYPE_URL, [], update);
    listenerAck = update;
    assert.deepEqual(serverNames(listener), [['shop.example.test'], []], 'the custom chain before the catch-all');
    const [custom, agentDomain] = listener.filter_chains;
    const sds = tlsOf(custom).common_tls_context.tls_certificate_sds_secret_configs;
    assert.deepEqual(sds.map((config: Node) => config.name), [customDomainSecretName('shop.example.test')]);
    assert.ok(sds[0].sds_config.ads, 'its certificate comes over the same ADS stream');
    // Envoy shares (does not drain) a chain whose whole FilterChain message is unchanged.
    const encode = (chain: Node) => Buffer.from(FilterChain.encode(FilterChain.fromObject(chain)).finish()).toString('base64');
    assert.equal(encode(agentDomain), encode(before.filter_chains[0]));

    // Envoy warms the new chain by asking for its secret.
    stream.request(SECRET_TYPE_URL, [customDomainSecretName('shop.example.test')]);
    secretAck = await stream.next('the secret');
    assert.equal(secretAck.type_url, SECRET_TYPE_URL);
    const secret = Secret.toObject(Secret.decode(secretAck.resources[0]!.value), toJson);
    stream.request(SECRET_TYPE_URL, [secret.name], secretAck);
    assert.equal(secret.name, 'custom_domain:shop.example.test');
    assert.equal(serialOf(secret.tls_certificate.certificate_chain.inline_string), firstSerial);
    assert.notEqual(new X509Certificate(secret.tls_certificate.certificate_chain.inline_string).checkHost('shop.example.test'), undefined, 'it covers the hostname');
    assert.equal(secret.tls_certificate.private_key.inline_string, certificate.key);
    assert.ok(!logs.some((line) => JSON.stringify(line).includes('PRIVATE KEY')), 'no log line holds a key');
  });

  it('a renewed certificate goes out by SDS alone: the listener is not sent again', async function () {
    const renewed = mint();
    await projection.putCertificate('shop.example.test', renewed);
    const update = await stream.next('the renewed secret');
    assert.equal(update.type_url, SECRET_TYPE_URL, 'the secret, not the listener');
    const secret = Secret.toObject(Secret.decode(update.resources[0]!.value), toJson);
    stream.request(SECRET_TYPE_URL, [secret.name], update);
    secretAck = update;
    assert.equal(serialOf(secret.tls_certificate.certificate_chain.inline_string), serialOf(renewed.chain));
    assert.notEqual(serialOf(renewed.chain), firstSerial);
    assert.equal(await stream.quiet(300), undefined, 'no listener update for a renewal');
  });

  it('refuses a certificate that does not cover its hostname, or whose key is another: nothing changes for Envoy', async function () {
    const one = mint();
    const other = mint();
    await projection.putDomain('wrong', 'wrong.elsewhere.test');
    await projection.putCertificate('wrong.elsewhere.test', one);
    await projection.putDomain('mixed', 'mixed.example.test');
    await projection.putCertificate('mixed.example.test', { chain: one.chain, key: other.key });
    assert.equal(await stream.quiet(400), undefined);
    const refusals = logs.filter((line) => line.msg === 'custom domain certificate refused: the current one stays');
    assert.deepEqual(refusals.map((line) => [line.domain, line.reason]).sort(), [
      ['mixed.example.test', "the key is not the certificate's"],
      ['wrong.elsewhere.test', 'the certificate does not cover wrong.elsewhere.test'],
    ]);
  });

  it('a NACK is logged with Envoy\'s reason and the refused version is not sent again', async function () {
    const certificate = mint();
    await projection.putDomain('api', 'api.example.test');
    await projection.putCertificate('api.example.test', certificate);
    const update = await stream.next('the listener with a second domain');
    assert.deepEqual(serverNames(listenerOf(update)), [['api.example.test'], ['shop.example.test'], []], 'sorted, so the same set makes the same listener');
    stream.request(LISTENER_TYPE_URL, [], update, 'Proto constraint validation failed (a test NACK)');
    assert.equal(await stream.quiet(300), undefined, 'a NACK is not answered with the same listener');
    const nack = logs.find((line) => line.msg?.startsWith('xDS: Envoy refused'));
    assert.equal(nack?.reason, 'Proto constraint validation failed (a test NACK)');
    assert.equal(nack?.type, LISTENER_TYPE_URL);
    listenerAck = update;
  });

  it('a deleted domain leaves the listener at once (the control API\'s removeDomain)', async function () {
    await projection.removeDomain('api', 'api.example.test');
    const update = await stream.next('the listener without the domain');
    assert.deepEqual(serverNames(listenerOf(update)), [['shop.example.test'], []]);
    stream.request(LISTENER_TYPE_URL, [], update);
  });

  it('stops authz at start with exit 78 and the file named when the listener template cannot be read', async function () {
    const require = createRequire(import.meta.url);
    const entry = new URL('../authz/main.ts', import.meta.url).pathname;
    const env = {
      PATH: process.env.PATH ?? '',
      REDIS_URL: process.env.TEST_REDIS_URL ?? '',
      AUTHZ_GRPC_SOCKET: join(dir, 'grpc.sock'),
      AUTHZ_WORKERS: '1',
      AUTHZ_METRICS_PORT: '0',
      AUTHZ_XDS_SOCKET: join(dir, 'other-xds.sock'),
      AUTHZ_XDS_TLS_LISTENER_FILE: join(dir, 'missing-listener.yaml'),
    };
    const { code, stderr } = await new Promise<{ code: number | null; stderr: string }>((done) => {
      const child = execFile(process.execPath, ['--import', require.resolve('tsx'), entry], { env, timeout: 20_000 }, (_error, _stdout, output) => done({ code: child.exitCode, stderr: output }));
    });
    assert.equal(code, 78, stderr);
    assert.match(stderr, /AUTHZ_XDS_TLS_LISTENER_FILE, AUTHZ_XDS_ENVOY_CONFIG_FILE: ENOENT/);
    assert.doesNotMatch(stderr, /\n\s+at /, 'a message, not a stack trace');
  });

  it('a stream that reconnects gets the current state at once (Envoy after an authz restart)', async function () {
    const again = new EnvoyStream(client.StreamAggregatedResources());
    again.request(LISTENER_TYPE_URL, []); // a new stream's first request names no nonce
    const first = await again.next('the listener on a new stream');
    assert.deepEqual(serverNames(listenerOf(first)), [['shop.example.test'], []]);
    again.request(SECRET_TYPE_URL, [customDomainSecretName('shop.example.test'), customDomainSecretName('gone.example.test')]);
    const secrets = await again.next('the secrets on a new stream');
    assert.deepEqual(secrets.resources.map((resource) => Secret.decode(resource.value).toJSON().name), ['custom_domain:shop.example.test'], 'only what authz has');
    again.call.end();
  });
});
