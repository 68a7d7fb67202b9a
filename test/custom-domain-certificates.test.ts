import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { randomBytes, X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { checkServerIdentity, connect as tlsConnect } from 'node:tls';
import type { Redis } from 'ioredis';
import { ManualClock } from './support/manual-clock.js';
import { startLocalEdge, type RunningLocalEdge } from '../envoy/local-edge/server.js';
import { openDomainCertificates, type DomainCertificates } from '../envoy/local-edge/domain-certificates.js';
import { TLS_SERVER_POLICY } from '../envoy/local-edge/tls-policy.js';
import { ensureLocalTls, type LocalTls } from '../scripts/lib/local-tls.js';
import { EdgeProjection } from '../control/edge/projection.js';
import { edgeKeyNames } from '../contract/edge-keys.js';
import { connectTestRedis, startTestAuthz, uniqueAgentDomain, type TestAuthz } from './support/edge-authz.js';
import { LOOPBACK_UPSTREAMS } from './support/edge-upstream.js';
import { waitFor } from './support/wait.js';

/**
 * The local edge's HTTPS port serving custom domains' certificates from Redis by SNI
 * (issue 34), written by the control API's projection: certificates made with openssl,
 * signed by the CA scripts/lib/local-tls.ts makes for the agent domain's wildcard.
 */
describe('custom domain certificates on the local edge', function () {
  this.timeout(60_000);
  const domain = uniqueAgentDomain('custom-certs');
  const clock = new ManualClock(new Date('2031-05-06T07:08:20.000Z'));
  const hostname = `chat-${randomBytes(3).toString('hex')}.example.test`;
  let dir: string;
  let tls: LocalTls;
  /** Both roots a client trusts here: the local CA (agent domain) and the custom domains' CA. */
  let ca: Buffer[];
  let redis: Redis;
  let projection: EdgeProjection;
  let authz: TestAuthz;
  let customDomains: DomainCertificates;
  let edge: RunningLocalEdge;
  const logs: { msg: string; fields: Record<string, unknown> }[] = [];

  /**
   * A CA of its own for custom hostnames, as an ACME CA's root is not the local CA (which is
   * name-constrained to the agent domain: scripts/lib/local-tls.ts).
   */
  const makeCustomCa = () =>
    execFileSync('openssl', [
      'req', '-x509', '-new', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '30', '-subj', '/CN=custom domains test CA',
      '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign',
      '-keyout', join(dir, 'custom-ca.key'), '-out', join(dir, 'custom-ca.crt'),
    ], { stdio: 'ignore' });

  /** A new key and certificate for exactly `name`, from the custom CA (openssl, as an ACME CA would issue one). */
  let minted = 0;
  const mint = (name: string) => {
    const base = join(dir, `leaf-${++minted}`);
    writeFileSync(`${base}.ext`, `subjectAltName = DNS:${name}\nbasicConstraints = critical, CA:FALSE\nextendedKeyUsage = serverAuth\n`);
    execFileSync('openssl', ['req', '-new', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-subj', `/CN=${name}`, '-keyout', `${base}.key`, '-out', `${base}.csr`], { stdio: 'ignore' });
    execFileSync('openssl', ['x509', '-req', '-in', `${base}.csr`, '-CA', join(dir, 'custom-ca.crt'), '-CAkey', join(dir, 'custom-ca.key'), '-set_serial', `0x${randomBytes(8).toString('hex')}`, '-days', '30', '-sha256', '-extfile', `${base}.ext`, '-out', `${base}.crt`], { stdio: 'ignore' });
    const chain = readFileSync(`${base}.crt`, 'utf8');
    return { chain, key: readFileSync(`${base}.key`, 'utf8'), serial: new X509Certificate(chain).serialNumber };
  };

  /**
   * One handshake naming `servername`; `authorized`: the chain verifies against the test's
   * CA and names `servername`, as a browser would check it (not refused here, so a test can
   * see which certificate a mismatch served).
   */
  const handshake = (servername: string) =>
    new Promise<{ authorized: boolean; serial: string }>((resolve, reject) => {
      const socket = tlsConnect({ host: '127.0.0.1', port: edge.httpsPort!, servername, ca, rejectUnauthorized: false }, () => {
        const peer = socket.getPeerCertificate();
        resolve({ authorized: socket.authorized && checkServerIdentity(servername.toLowerCase(), peer) === undefined, serial: peer.serialNumber });
        socket.destroy();
      });
      socket.on('error', reject);
    });
  const served = (serial: string) => waitFor(`serial ${serial} on ${hostname}`, async () => ((await handshake(hostname)).serial === serial ? true : undefined));

  before(async function () {
    dir = mkdtempSync(join(tmpdir(), 'custom-certs-'));
    tls = ensureLocalTls({ dir, domain });
    makeCustomCa();
    ca = [readFileSync(tls.caFile), readFileSync(join(dir, 'custom-ca.crt'))];
    redis = connectTestRedis();
    projection = new EdgeProjection(redis, redis.options.keyPrefix);
    authz = await startTestAuthz({ redis, clock, agentDomain: domain });
    customDomains = openDomainCertificates({
      redis,
      subscriber: redis.duplicate(),
      keyPrefix: redis.options.keyPrefix!,
      policy: TLS_SERVER_POLICY,
      log: (msg, fields = {}) => logs.push({ msg, fields }),
    });
    await customDomains.loaded;
    edge = await startLocalEdge({
      upstreamSubnets: LOOPBACK_UPSTREAMS,
      port: 0,
      authzAddress: authz.authz.grpcAddress,
      tls: { certFile: tls.certFile, keyFile: tls.keyFile, port: 0, customDomains },
    });
  });

  after(async function () {
    await edge?.close();
    customDomains?.close();
    await authz?.close();
    await redis?.del(edgeKeyNames.certificates, edgeKeyNames.domainHosts);
    redis?.disconnect();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('serves the custom hostname its own certificate, a new one without a restart, and the wildcard once it is removed', async () => {
    const wildcardSerial = new X509Certificate(readFileSync(tls.certFile)).serialNumber;
    // Before any certificate: the agent domain's, which does not name the custom hostname.
    const before = await handshake(hostname);
    assert.deepEqual(before, { authorized: false, serial: wildcardSerial });

    const first = mint(hostname);
    await projection.putCertificate(hostname, first);
    await served(first.serial);
    assert.deepEqual(await handshake(hostname), { authorized: true, serial: first.serial });
    assert.deepEqual(await handshake(`x.${domain}`), { authorized: true, serial: wildcardSerial }, 'the agent domain keeps its own');

    const renewed = mint(hostname);
    await projection.putCertificate(hostname, renewed);
    await served(renewed.serial);
    assert.deepEqual(await handshake(hostname.toUpperCase()), { authorized: true, serial: renewed.serial });

    await projection.removeDomain('some-agent', hostname);
    await served(wildcardSerial);
    assert.equal(await redis.hget(edgeKeyNames.certificates, hostname), null);
  });

  it('keeps the current certificate when a new value does not parse or its key is not the certificate\'s, and never logs the key', async () => {
    const good = mint(hostname);
    await projection.putCertificate(hostname, good);
    await served(good.serial);

    const other = mint(hostname);
    const mismatched = { chain: other.chain, key: good.key };
    await projection.putCertificate(hostname, mismatched);
    await redis.hset(edgeKeyNames.certificates, `broken.${hostname}`, `{"chain": "x", "key": ${JSON.stringify(good.key)}`);
    await customDomains.reload(); // what a message or the periodic reload does, awaited

    assert.equal((await handshake(hostname)).serial, good.serial);
    const refusals = logs.filter((entry) => entry.msg.startsWith('custom domain certificate refused'));
    assert.deepEqual(refusals.map((entry) => entry.fields.hostname).sort(), [`broken.${hostname}`, hostname].sort());
    assert.equal(refusals.find((entry) => entry.fields.hostname === hostname)!.fields.reason, 'the private key does not match the certificate');
    const keyBody = good.key.split('\n')[1]!;
    assert.ok(!JSON.stringify(logs).includes(keyBody), 'no log line carries private key material');
  });
});
