import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { connect, createServer } from 'node:tls';
import { ensureLocalTls, trustInstructions } from '../scripts/lib/local-tls.js';

/** `npm run up`'s local CA and wildcard certificate, made with the real openssl CLI. */
describe('npm run up: a local CA and a certificate for the agent domain', function () {
  this.timeout(30_000);
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'local-tls-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const read = (file: string) => new X509Certificate(readFileSync(file));

  it('makes a CA and a certificate for *.agents.localhost and agents.localhost that verifies against it, keys 0600', function () {
    const tls = ensureLocalTls({ dir: join(dir, 'tls'), domain: 'agents.localhost' });
    assert.equal(tls.made, 'ca and certificate');
    const ca = read(tls.caFile);
    const leaf = read(tls.certFile);
    assert.ok(ca.ca, 'the CA is a CA');
    assert.ok(!leaf.ca, 'the certificate is not');
    assert.ok(leaf.checkIssued(ca) && leaf.verify(ca.publicKey), 'signed by the CA');
    assert.equal(leaf.subjectAltName, 'DNS:*.agents.localhost, DNS:agents.localhost');
    assert.equal(leaf.checkHost('a1b2.agents.localhost'), '*.agents.localhost');
    assert.equal(leaf.checkHost('agents.localhost'), 'agents.localhost');
    assert.equal(leaf.checkHost('a.b.agents.localhost'), undefined, 'one label, as a wildcard covers');
    assert.match(leaf.keyUsage?.join(',') ?? '', /1\.3\.6\.1\.5\.5\.7\.3\.1/, 'serverAuth');
    const days = (new Date(leaf.validTo).getTime() - Date.now()) / 86_400_000;
    assert.ok(days > 390 && days <= 398, `within what browsers accept: ${days} days`);
    for (const key of [join(dir, 'tls', 'ca.key'), tls.keyFile]) assert.equal(statSync(key).mode & 0o777, 0o600, key);
    assert.equal(statSync(join(dir, 'tls')).mode & 0o777, 0o700);
  });

  it('is trusted by a TLS client given the CA, for a name under the domain (SNI), and for no other', async function () {
    const tls = ensureLocalTls({ dir, domain: 'agents.localhost' });
    const server = createServer({ cert: readFileSync(tls.certFile), key: readFileSync(tls.keyFile) }, (socket) => socket.end('hello'));
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const { port } = server.address() as AddressInfo;
    const handshake = (servername: string) =>
      new Promise<string>((resolve, reject) => {
        const socket = connect({ port, host: '127.0.0.1', servername, ca: readFileSync(tls.caFile) }, () => {
          resolve(socket.getPeerCertificate().serialNumber);
          socket.destroy();
        });
        socket.on('error', reject);
      });
    try {
      assert.equal(await handshake('my-agent.agents.localhost'), read(tls.certFile).serialNumber);
      await assert.rejects(handshake('my-agent.example.com'), /ERR_TLS_CERT_ALTNAME_INVALID|does not match/);
    } finally {
      server.close();
    }
  });

  it('reuses what is still good, and makes the certificate again, keeping the CA, when it nears its end or its key does not match', function () {
    const first = ensureLocalTls({ dir, domain: 'agents.localhost' });
    const [caSerial, leafSerial] = [read(first.caFile).serialNumber, read(first.certFile).serialNumber];
    assert.equal(ensureLocalTls({ dir, domain: 'agents.localhost' }).made, 'nothing');
    assert.equal(read(first.certFile).serialNumber, leafSerial);

    const soon = new Date(Date.now() + 380 * 86_400_000);
    assert.equal(ensureLocalTls({ dir, domain: 'agents.localhost', now: soon }).made, 'certificate', '17 days left: renewed');
    assert.notEqual(read(first.certFile).serialNumber, leafSerial);
    assert.equal(read(first.caFile).serialNumber, caSerial, 'the CA users trust stays');

    // A certificate whose key was lost or replaced is made again too.
    writeFileSync(first.keyFile, readFileSync(join(dir, 'ca.key')));
    assert.equal(ensureLocalTls({ dir, domain: 'agents.localhost' }).made, 'certificate');
  });

  it('makes a new CA for another agent domain: the CA may sign names under its own domain only', function () {
    const first = ensureLocalTls({ dir, domain: 'agents.localhost' });
    const caSerial = read(first.caFile).serialNumber;
    const second = ensureLocalTls({ dir, domain: 'agents.example.test' });
    assert.equal(second.made, 'ca and certificate');
    assert.notEqual(read(second.caFile).serialNumber, caSerial);
    assert.equal(read(second.certFile).checkHost('x.agents.example.test'), '*.agents.example.test');
    const text = execFileSync('openssl', ['x509', '-in', second.caFile, '-noout', '-text'], { encoding: 'utf8' });
    assert.match(text, /X509v3 Name Constraints: critical\s+Permitted:\s+DNS:agents\.example\.test\s/);
  });

  it('says what to do when openssl is missing, and refuses a domain that is no DNS name', function () {
    assert.throws(() => ensureLocalTls({ dir, domain: 'agents.localhost', openssl: join(dir, 'no-openssl') }), /needs the openssl command.*EDGE_TLS_CERT_FILE/s);
    assert.throws(() => ensureLocalTls({ dir, domain: 'agents.localhost\n[ca_ext]' }), /no lower-case DNS name/);
  });

  it('prints how to trust the CA: curl, Node, the Debian and macOS system stores', function () {
    const text = trustInstructions('/srv/.data/tls/ca.crt', 'https://x.agents.localhost:7443/health');
    assert.match(text, /curl --cacert \/srv\/\.data\/tls\/ca\.crt https:\/\/x\.agents\.localhost:7443\/health/);
    assert.match(text, /update-ca-certificates/);
    assert.match(text, /security add-trusted-cert/);
    assert.match(text, /NODE_EXTRA_CA_CERTS=/);
  });
});
