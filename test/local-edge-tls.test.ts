import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect as tlsConnect, type ConnectionOptions, type TLSSocket } from 'node:tls';
import type { Redis } from 'ioredis';
import { EdgeProjection } from '../control/edge/projection.js';
import { ManualClock } from './support/manual-clock.js';
import { startLocalEdge, type RunningLocalEdge } from '../envoy/local-edge/server.js';
import { ensureLocalTls } from '../scripts/lib/local-tls.js';
import { connectTestRedis, EdgeProjectionWriter, newAccessKey, startTestAuthz, uniqueAgentDomain, type TestAuthz } from './support/edge-authz.js';
import { edgeRequest, LOOPBACK_UPSTREAMS, startUpstream, type TestUpstream } from './support/edge-upstream.js';
import { waitFor } from './support/wait.js';

/**
 * The local edge's HTTPS port (envoy.yaml's TLS listener) in front of a real authz on real
 * Redis: certificates from a CA made with openssl (scripts/lib/local-tls.ts) in this
 * test's temp dir, served from files the test replaces on disk while the edge runs.
 */
describe('local edge over HTTPS', function () {
  this.timeout(60_000);
  const domain = uniqueAgentDomain('edge-tls');
  const clock = new ManualClock(new Date('2031-05-06T07:08:20.000Z'));
  let root: string;
  let ca: Buffer;
  let served: { certFile: string; keyFile: string };
  let redis: Redis;
  let projection: EdgeProjectionWriter;
  let authz: TestAuthz;
  let edge: RunningLocalEdge;
  let replica: TestUpstream;
  const logs: { msg: string; fields: Record<string, unknown> }[] = [];
  let nextSlug = 0;
  const slug = (label: string) => `${label}-${++nextSlug}`;

  /** A new certificate and key from the test's CA (a directory of their own, the CA copied in). */
  let minted = 0;
  const mint = () => {
    const dir = join(root, `pair-${++minted}`);
    mkdirSync(dir);
    for (const file of ['ca.crt', 'ca.key']) copyFileSync(join(root, 'ca', file), join(dir, file));
    return ensureLocalTls({ dir, domain });
  };
  /** Moves a file into the edge's directory, as an operator replaces one (written beside, then renamed). */
  const install = (from: string, to: string) => {
    const staged = `${to}.new`;
    copyFileSync(from, staged);
    renameSync(staged, to);
  };
  const serialOf = (file: string) => new X509Certificate(readFileSync(file)).serialNumber;

  /** One handshake with SNI `servername`, verifying the chain against the test's CA; the peer's serial. */
  const handshake = (servername: string, options: ConnectionOptions = {}) =>
    new Promise<{ serial: string; protocol: string | null; alpn: string | false | null; cipher: string }>((resolve, reject) => {
      const socket = tlsConnect({ host: '127.0.0.1', port: edge.httpsPort!, servername, ca, ALPNProtocols: ['h2', 'http/1.1'], ...options }, () => {
        resolve({ serial: socket.getPeerCertificate().serialNumber, protocol: socket.getProtocol(), alpn: socket.alpnProtocol, cipher: socket.getCipher().name });
        socket.destroy();
      });
      socket.on('error', reject);
    });

  interface HttpsAnswer {
    status: number;
    headers: Record<string, string | string[] | undefined>;
    body: string;
    socket: TLSSocket;
    /** The serial of the certificate the connection was made with. */
    serial: string;
    reused: boolean;
  }
  const get = (agentSlug: string, options: { path?: string; headers?: Record<string, string>; agent?: HttpsAgent } = {}) =>
    new Promise<HttpsAnswer>((resolve, reject) => {
      const host = `${agentSlug}.${domain}`;
      const request = httpsRequest(
        { host: '127.0.0.1', port: edge.httpsPort!, servername: host, ca, path: options.path ?? '/health', headers: { host: `${host}:${edge.httpsPort}`, ...options.headers }, agent: options.agent ?? false },
        (response) => {
          const socket = response.socket as TLSSocket;
          const serial = socket.getPeerCertificate().serialNumber;
          const chunks: Buffer[] = [];
          response.on('data', (chunk: Buffer) => chunks.push(chunk));
          response.on('end', () => resolve({ status: response.statusCode ?? 0, headers: response.headers, body: Buffer.concat(chunks).toString(), socket, serial, reused: request.reusedSocket }));
        },
      );
      request.on('error', reject);
      request.end();
    });

  before(async function () {
    root = mkdtempSync(join(tmpdir(), 'edge-tls-'));
    const first = ensureLocalTls({ dir: join(root, 'ca'), domain });
    ca = readFileSync(first.caFile);
    mkdirSync(join(root, 'served'));
    served = { certFile: join(root, 'served', 'tls.crt'), keyFile: join(root, 'served', 'tls.key') };
    install(first.keyFile, served.keyFile);
    install(first.certFile, served.certFile);
    redis = connectTestRedis();
    projection = new EdgeProjectionWriter(redis);
    authz = await startTestAuthz({ redis, clock, agentDomain: domain });
    edge = await startLocalEdge({
      upstreamSubnets: LOOPBACK_UPSTREAMS,
      port: 0,
      authzAddress: authz.authz.grpcAddress,
      tls: { ...served, port: 0, checkIntervalMs: 500 },
      httpRedirect: true,
      log: (msg, fields = {}) => logs.push({ msg, fields }),
    });
    replica = await startUpstream('a');
  });

  after(async function () {
    await edge?.close();
    await authz?.close();
    await replica?.close();
    await projection?.cleanUp();
    redis?.disconnect();
    if (root) rmSync(root, { recursive: true, force: true });
  });

  it("serves the agent over TLS to a client that verifies the chain against the CA, for the agent's name (SNI)", async function () {
    const agentSlug = slug('hello');
    const id = await projection.putAgent({ slug: agentSlug, access: 'public', upstreams: [replica.address] });
    const answer = await get(agentSlug, { headers: { 'x-forwarded-proto': 'http' } });
    assert.equal(answer.status, 200);
    assert.equal(answer.headers['x-upstream'], 'a');
    assert.ok(answer.socket.authorized, 'the chain verified against the CA');
    assert.equal(answer.socket.getProtocol(), 'TLSv1.3');
    assert.equal(answer.serial, serialOf(served.certFile));
    const echoed = JSON.parse(answer.body);
    assert.equal(echoed.headers['x-forwarded-proto'], 'https', "the connection's scheme, whatever the client sent");
    assert.equal(echoed.headers['x-agent-id'], id);
    assert.equal(echoed.headers.host, `${agentSlug}.${domain}:${edge.httpsPort}`);

    // The same Check as on the plain port: a private agent wants its key.
    const privateSlug = slug('private');
    const key = newAccessKey();
    await projection.putAgent({ slug: privateSlug, access: 'private', keys: [key], upstreams: [replica.address] });
    assert.equal((await get(privateSlug)).status, 401);
    assert.equal((await get(privateSlug, { headers: { authorization: `Bearer ${key}` } })).status, 200);

    // ALPN: HTTP/1.1, what the local edge serves, when the client offers h2 first.
    assert.equal((await handshake(`${agentSlug}.${domain}`)).alpn, 'http/1.1');
    // A client that does not trust the CA, or asks for a name the certificate lacks, gives up.
    await assert.rejects(handshake(`${agentSlug}.${domain}`, { ca: undefined }), /self-signed|unable to (get|verify)/i);
    await assert.rejects(handshake('agent.elsewhere.test'), /ERR_TLS_CERT_ALTNAME_INVALID|does not match/);
  });

  it('takes an absolute-form request line that names https and the Host on the TLS port, and refuses one naming http', async function () {
    const agentSlug = slug('absolute');
    await projection.putAgent({ slug: agentSlug, access: 'public', upstreams: [replica.address] });
    const host = `${agentSlug}.${domain}:${edge.httpsPort}`;
    const absolute = await get(agentSlug, { path: `https://${host}/invoke?x=1` });
    assert.equal(absolute.status, 200);
    assert.equal(JSON.parse(absolute.body).url, '/invoke?x=1', 'forwarded in origin-form');
    const plain = await get(agentSlug, { path: `http://${host}/invoke` });
    assert.equal(plain.status, 400);
    assert.equal(plain.body, 'bad request: request target is not an https URL\n');
  });

  it('refuses TLS 1.1 and TLS 1.2 ciphers without ECDHE or AEAD; takes TLS 1.2 with ECDHE and AES-GCM or ChaCha20', async function () {
    const name = `x.${domain}`;
    await assert.rejects(handshake(name, { minVersion: 'TLSv1', maxVersion: 'TLSv1.1', ciphers: 'DEFAULT@SECLEVEL=0' }), (error: NodeJS.ErrnoException) => {
      assert.equal(error.code, 'ERR_SSL_TLSV1_ALERT_PROTOCOL_VERSION', 'the server refused the version');
      return true;
    });
    for (const weak of ['ECDHE-ECDSA-AES128-SHA', 'ECDHE-ECDSA-AES256-SHA384', 'AES128-GCM-SHA256']) {
      await assert.rejects(handshake(name, { maxVersion: 'TLSv1.2', ciphers: weak }), (error: NodeJS.ErrnoException) => {
        // OpenSSL 3.5 (Node 24) names the alert ERR_SSL_SSL/TLS_ALERT_HANDSHAKE_FAILURE, 3.0 (Node 20) ..._SSLV3_...: the server's handshake_failure either way.
        assert.match(error.code ?? '', /^ERR_SSL_(SSLV3|SSL\/TLS)_ALERT_HANDSHAKE_FAILURE$/, `${weak}: no shared cipher, got ${error.code}`);
        return true;
      });
    }
    for (const strong of ['ECDHE-ECDSA-AES128-GCM-SHA256', 'ECDHE-ECDSA-AES256-GCM-SHA384', 'ECDHE-ECDSA-CHACHA20-POLY1305']) {
      const accepted = await handshake(name, { maxVersion: 'TLSv1.2', ciphers: strong });
      assert.deepEqual([accepted.protocol, accepted.cipher], ['TLSv1.2', strong]);
    }
  });

  it('serves a certificate replaced on disk to new connections without a restart, while open connections keep working', async function () {
    const agentSlug = slug('swap');
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const slow = await startUpstream('slow', (request, response) => {
      response.writeHead(200, { 'content-type': 'text/plain' });
      response.write('first half, ');
      void released.then(() => response.end('second half'));
    });
    await projection.putAgent({ slug: agentSlug, access: 'public', upstreams: [replica.address] });
    const slowSlug = slug('slow');
    await projection.putAgent({ slug: slowSlug, access: 'public', upstreams: [slow.address] });
    try {
      const keptAlive = new HttpsAgent({ keepAlive: true, maxSockets: 1 });
      const before = await get(agentSlug, { agent: keptAlive });
      const oldSerial = before.serial;
      assert.equal(oldSerial, serialOf(served.certFile));
      // A response that streams across the swap.
      const streaming = get(slowSlug, { path: '/stream' });
      await waitFor('the slow response to start', async () => (slow.received.length > 0 ? true : undefined), 5_000);

      const next = mint();
      install(next.keyFile, served.keyFile);
      install(next.certFile, served.certFile);
      const newSerial = serialOf(next.certFile);
      await waitFor('a new connection to get the new certificate', async () => ((await handshake(`${agentSlug}.${domain}`)).serial === newSerial ? true : undefined), 10_000);
      assert.ok(logs.some((entry) => entry.msg === 'certificate reloaded' && entry.fields.serial === newSerial), JSON.stringify(logs));
      // A client that sends no SNI gets the server's default context, swapped as well, ALPN and all.
      const withoutSni = await handshake('', { checkServerIdentity: () => undefined });
      assert.deepEqual([withoutSni.serial, withoutSni.alpn], [newSerial, 'http/1.1']);
      assert.equal((await handshake(`${agentSlug}.${domain}`)).alpn, 'http/1.1');

      const again = await get(agentSlug, { agent: keptAlive });
      assert.equal(again.status, 200);
      assert.ok(again.reused, 'the same connection as before the swap');
      assert.equal(again.serial, oldSerial, 'it keeps the certificate it started with');
      keptAlive.destroy();

      release();
      const streamed = await streaming;
      assert.equal(streamed.status, 200);
      assert.equal(streamed.body, 'first half, second half', 'the response in flight went on to its end');
      assert.equal(streamed.serial, oldSerial);
    } finally {
      release();
      await slow.close();
    }
  });

  it('keeps the current certificate, and logs, while the new certificate and key do not match; takes the pair once they do', async function () {
    const serving = serialOf(served.certFile);
    const next = mint();
    const refusedBefore = logs.filter((entry) => entry.msg.startsWith('certificate not reloaded')).length;
    // Half replaced: the new certificate beside the old key.
    install(next.certFile, served.certFile);
    await waitFor('the edge to refuse the pair', async () => (logs.filter((entry) => entry.msg.startsWith('certificate not reloaded')).length > refusedBefore ? true : undefined), 10_000);
    const refusal = logs.filter((entry) => entry.msg.startsWith('certificate not reloaded')).at(-1)!;
    assert.match(String(refusal.fields.reason), /private key does not match the certificate/);
    assert.equal(refusal.fields.serving, serving);
    assert.equal((await handshake(`x.${domain}`)).serial, serving, 'new connections still get the old pair');
    // The periodic check does not take it, nor log it again, while the files stay as they are.
    await new Promise((resolve) => setTimeout(resolve, 1_200));
    assert.equal((await handshake(`x.${domain}`)).serial, serving);
    assert.equal(logs.filter((entry) => entry.msg.startsWith('certificate not reloaded')).length, refusedBefore + 1);

    install(next.keyFile, served.keyFile);
    const newSerial = serialOf(next.certFile);
    await waitFor('the matching key to complete the pair', async () => ((await handshake(`x.${domain}`)).serial === newSerial ? true : undefined), 10_000);
  });

  describe('EDGE_HTTP_REDIRECT on the plain port', function () {
    it('answers 308 to https on the same host, path and query, without asking authz or reaching the agent', async function () {
      const agentSlug = slug('redirected');
      await projection.putAgent({ slug: agentSlug, access: 'private', keys: [newAccessKey()], upstreams: [replica.address] });
      const reached = replica.received.length;
      const answer = await edgeRequest({ port: edge.port, host: `${agentSlug}.${domain}:7080`, path: '/invoke?stream=true&x=%2F', method: 'POST', body: '{}' });
      assert.equal(answer.status, 308, 'a private agent without a key is redirected, not refused: authz was not asked');
      assert.equal(answer.headers.location, `https://${agentSlug}.${domain}:${edge.httpsPort}/invoke?stream=true&x=%2F`);
      assert.equal(answer.body, '');
      assert.match(String(answer.headers['x-request-id']), /^[0-9a-f-]{36}$/);
      assert.equal((await edgeRequest({ port: edge.port, host: `nobody.${domain}`, path: '/' })).headers.location, `https://nobody.${domain}:${edge.httpsPort}/`);
      assert.equal((await edgeRequest({ port: edge.port, host: '[::1]:7080', path: '/' })).headers.location, `https://[::1]:${edge.httpsPort}/`);
      assert.equal((await edgeRequest({ port: edge.port, host: 'bad host/x', path: '/' })).status, 400);
      assert.equal(replica.received.length, reached);
    });

    it('answers ACME HTTP-01 challenges itself on plain HTTP, from the pending order in Redis, for any hostname', async function () {
      const agentSlug = slug('acme');
      await projection.putAgent({ slug: agentSlug, access: 'public', upstreams: [replica.address] });
      const token = `tok${agentSlug.replace(/[^A-Za-z0-9_-]/g, "")}0123456789abcdef`; // base64url, at least 128 bits (RFC 8555 §8.3)
      await new EdgeProjection(redis).putChallenge(token, `${token}.thumbprint`, 60);
      try {
        const answer = await edgeRequest({ port: edge.port, host: 'chat.customer.test', path: `/.well-known/acme-challenge/${token}` });
        assert.equal(answer.status, 200, `not redirected: the CA asks over plain HTTP (RFC 8555 §8.3); got ${answer.body}`);
        assert.equal(answer.body, `${token}.thumbprint`);
        const unknown = await edgeRequest({ port: edge.port, host: `${agentSlug}.${domain}`, path: '/.well-known/acme-challenge/token-nobody-has' });
        assert.equal(unknown.status, 404, 'never forwarded to the agent');
      } finally {
        await new EdgeProjection(redis).removeChallenge(token);
      }
      assert.equal((await edgeRequest({ port: edge.port, host: `${agentSlug}.${domain}`, path: '/.well-known/acme-challenge' })).status, 308, 'the prefix, with its slash');
    });
  });

  it('does not start with a pair that cannot be served, and says why', async function () {
    const other = mint();
    await assert.rejects(
      startLocalEdge({ port: 0, authzAddress: authz.authz.grpcAddress, tls: { certFile: other.certFile, keyFile: join(root, 'ca', 'tls.key'), port: 0 } }),
      /private key does not match the certificate/,
    );
    await assert.rejects(startLocalEdge({ port: 0, authzAddress: authz.authz.grpcAddress, tls: { certFile: join(root, 'missing.crt'), keyFile: other.keyFile, port: 0 } }), /cannot read the pair/);
    await assert.rejects(startLocalEdge({ port: 0, authzAddress: authz.authz.grpcAddress, httpRedirect: true }), /only when it serves https/);
  });
});
