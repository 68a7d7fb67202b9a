import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createPrivateKey, generateKeyPairSync, X509Certificate, type KeyObject } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect, createServer as createTlsServer } from 'node:tls';
import { AcmeClient, AcmeError, AcmeErrorType, type Http01Publisher } from '../control/acme/acme-client.js';
import { AcmeTransport, parseRetryAfter } from '../control/acme/acme-transport.js';
import { certificateInfo, renewalCertId } from '../control/acme/certificate-info.js';
import { certificateRequestPem, createCertificateRequest } from '../control/acme/csr.js';
import { generateAccountKey, jwkThumbprint, keyAuthorization, publicJwk } from '../control/acme/jws.js';
import { freePort } from '../scripts/lib/local-services.js';
import { startPebble, type RunningPebble } from './support/pebble.js';

/**
 * What answers HTTP-01 on Pebble's httpPort, as the edge will: a plain HTTP server serving
 * what was published at /.well-known/acme-challenge/<token> (RFC 8555 §8.3). `lie` makes it
 * answer a wrong key authorization, as a misconfigured edge would.
 */
class Http01Responder implements Http01Publisher {
  readonly published = new Map<string, string>();
  readonly withdrawn: string[] = [];
  lie = false;
  private readonly server: Server = createHttpServer((req, res) => {
    const token = /^\/\.well-known\/acme-challenge\/([A-Za-z0-9_-]+)$/.exec(req.url ?? '')?.[1];
    const answer = token ? this.published.get(token) : undefined;
    if (!answer) return void res.writeHead(404).end();
    res.writeHead(200, { 'content-type': 'application/octet-stream' }).end(this.lie ? `${answer.split('.')[0]}.not-the-thumbprint` : answer);
  });

  async listen(port: number): Promise<void> {
    this.server.listen(port, '127.0.0.1');
    await once(this.server, 'listening');
  }

  async publish(token: string, keyAuthorization: string): Promise<void> {
    this.published.set(token, keyAuthorization);
  }

  async withdraw(token: string): Promise<void> {
    this.published.delete(token);
    this.withdrawn.push(token);
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

const VALIDITY_SECONDS = 6 * 3600;
const BLOCKED = 'blocked.example.test';

describe('ACME client against a real Pebble (RFC 8555, HTTP-01)', function () {
  this.timeout(60_000);
  let pebble: RunningPebble;
  let responder: Http01Responder;
  let accountKey: KeyObject;
  let client: AcmeClient;
  let counter = 0;
  // A name per test: Pebble reuses nothing, but a fresh name keeps each test's order its own.
  const nextHostname = () => `agent-${process.pid}-${++counter}.example.test`;

  before(async () => {
    responder = new Http01Responder();
    const httpPort = await freePort();
    await responder.listen(httpPort);
    pebble = await startPebble({ httpPort, domainBlocklist: [BLOCKED], certificateValiditySeconds: VALIDITY_SECONDS });
    accountKey = generateAccountKey();
    client = await AcmeClient.open({ directoryUrl: pebble.directoryUrl, accountKey, email: 'ops@example.test', ca: pebble.caPem });
  });

  after(async () => {
    client?.close();
    await pebble?.stop();
    await responder?.close();
  });

  beforeEach(() => {
    responder.lie = false;
    responder.withdrawn.length = 0;
  });

  it('issues a certificate for the hostname that a TLS client trusting Pebble\'s root accepts, and withdraws the token', async () => {
    const hostname = nextHostname();
    await pebble.addA(hostname, '127.0.0.1');
    const phases: string[] = [];
    const issued = await client.issue(hostname, responder, (phase) => phases.push(phase));

    assert.deepEqual(phases, ['authorizing', 'finalizing']);
    assert.equal(responder.published.size, 0, 'nothing left published');
    assert.equal(responder.withdrawn.length, 1, 'the one token withdrawn');

    const leaf = new X509Certificate(issued.chainPem);
    assert.equal(leaf.subjectAltName, `DNS:${hostname}`);
    assert.ok(leaf.checkPrivateKey(createPrivateKey(issued.privateKeyPem)), 'the key returned is the certificate\'s');
    assert.equal(issued.serial, openssl(['x509', '-noout', '-serial'], leaf.toString()).trim().replace(/^serial=/, ''));
    assert.equal(issued.notBefore.getTime(), new Date(leaf.validFrom).getTime());
    assert.equal(issued.notAfter.getTime(), new Date(leaf.validTo).getTime());
    // Pebble sets notAfter = notBefore + period - 1 s (ca/ca.go, newCertificate).
    assert.equal(issued.notAfter.getTime() - issued.notBefore.getTime(), (VALIDITY_SECONDS - 1) * 1000);

    const rootPem = await pebble.rootPem();
    assert.equal(await tlsHandshakeAuthorized(issued.chainPem, issued.privateKeyPem, rootPem, hostname), true);
    await assert.rejects(tlsHandshakeAuthorized(issued.chainPem, issued.privateKeyPem, rootPem, 'other.example.test'), /does not match|altnames/i, 'and for no other name');
  });

  it('gives the certificate the CertID openssl\'s view of its AKI and serial make (RFC 9773 §4.1)', async () => {
    const hostname = nextHostname();
    const issued = await client.issue(hostname, responder);
    const text = openssl(['x509', '-noout', '-ext', 'authorityKeyIdentifier', '-serial'], issued.chainPem);
    const aki = /Authority Key Identifier:\s*\n\s*(?:keyid:)?([0-9A-F:]+)/.exec(text)?.[1];
    const serialHex = /serial=([0-9A-F]+)/.exec(text)?.[1];
    assert.ok(aki && serialHex, text);
    // The DER INTEGER's content: a 0x00 ahead of a high first bit, the sign byte (X.690 §8.3).
    const serialBytes = Buffer.from(serialHex.length % 2 ? `0${serialHex}` : serialHex, 'hex');
    const serialContent = serialBytes[0]! & 0x80 ? Buffer.concat([Buffer.from([0]), serialBytes]) : serialBytes;
    assert.equal(issued.certId, `${Buffer.from(aki.replace(/:/g, ''), 'hex').toString('base64url')}.${serialContent.toString('base64url')}`);
  });

  it('finds the same account when opened again with the same key (RFC 8555 §7.3.1)', async () => {
    const again = await AcmeClient.open({ directoryUrl: pebble.directoryUrl, accountKey, ca: pebble.caPem });
    again.close();
    assert.equal(again.accountUrl, client.accountUrl);
    const other = await AcmeClient.open({ directoryUrl: pebble.directoryUrl, accountKey: generateAccountKey(), ca: pebble.caPem });
    other.close();
    assert.notEqual(other.accountUrl, client.accountUrl, 'another key is another account');
  });

  it('fails with Pebble\'s reason when the served key authorization is wrong, and still withdraws the token', async () => {
    responder.lie = true;
    const error = await client.issue(nextHostname(), responder).then(
      () => assert.fail('issued despite a wrong key authorization'),
      (caught: unknown) => caught,
    );
    assert.ok(error instanceof AcmeError, String(error));
    assert.equal(error.type, AcmeErrorType.unauthorized);
    assert.equal(error.status, 403, 'the status the problem document states');
    assert.match(error.detail, /key authorization file from the server did not match/);
    assert.match(error.message, /did not match/);
    assert.equal(responder.withdrawn.length, 1);
    assert.doesNotMatch(error.message, /PRIVATE KEY/);
    assert.ok(!error.message.includes(accountKey.export({ format: 'jwk' }).d!), 'the account key stays out of the message');
  });

  it('reports a name the CA refuses by policy as rejectedIdentifier, before any challenge', async () => {
    const error = await client.issue(BLOCKED, responder).then(() => assert.fail('issued a blocked name'), (caught: unknown) => caught);
    assert.ok(error instanceof AcmeError, String(error));
    assert.equal(error.type, AcmeErrorType.rejectedIdentifier);
    assert.match(error.detail, /forbidden by policy/);
    assert.equal(responder.withdrawn.length, 0, 'no challenge was started');
  });

  it('answers null for renewal info: Pebble 2.4.0\'s directory has no renewalInfo', async () => {
    assert.equal(await client.renewalInfo('aYhba4dGQEHhs3uEe6CuLN4ByNQ.AIdlQyE'), null);
  });

  it('recovers from a badNonce by retrying once with the nonce the refusal carried (RFC 8555 §6.5)', async () => {
    const transport = new AcmeTransport({ ca: pebble.caPem, userAgent: 'test', requestTimeoutMs: 10_000 });
    try {
      const directory = JSON.parse((await transport.get(pebble.directoryUrl, 'directory')).body.toString()) as { newNonce: string; newAccount: string };
      transport.useNewNonceUrl(directory.newNonce);
      const fresh = await transport.get(directory.newNonce, 'newNonce');
      const nonce = fresh.headers['replay-nonce'] as string;
      const signing = { key: accountKey, signer: { jwk: publicJwk(accountKey) } };
      transport.rememberNonce(nonce);
      await transport.post(directory.newAccount, { termsOfServiceAgreed: true }, signing, 'newAccount');
      // The same nonce again: spent, so Pebble refuses it as badNonce; the retry carries the refusal's own.
      transport.rememberNonce(nonce);
      const answer = await transport.post(directory.newAccount, { termsOfServiceAgreed: true }, signing, 'newAccount');
      assert.equal(answer.status, 200);
      assert.equal(answer.location, client.accountUrl);
    } finally {
      transport.close();
    }
  });
});

describe('ACME key material and formats', () => {
  it('builds a CSR openssl verifies, with CN and subjectAltName for the hostname', () => {
    const request = createCertificateRequest('agent-7.example.test');
    const text = openssl(['req', '-noout', '-verify', '-text'], certificateRequestPem(request.der), true);
    assert.match(text, /self-signature verify OK|verify OK/);
    assert.match(text, /Subject: CN ?= ?agent-7\.example\.test/);
    assert.match(text, /X509v3 Subject Alternative Name:\s*\n\s*DNS:agent-7\.example\.test/);
    assert.match(text, /ecdsa-with-SHA256/);
  });

  it('leaves CN out for a name longer than a CN may be, the SAN still naming it', () => {
    const hostname = `${'a'.repeat(60)}.example.test`;
    const text = openssl(['req', '-noout', '-verify', '-text'], certificateRequestPem(createCertificateRequest(hostname).der), true);
    assert.match(text, /verify OK/);
    assert.doesNotMatch(text, /CN ?=/);
    assert.match(text, new RegExp(`DNS:${hostname.replace(/\./g, '\\.')}`));
  });

  it('keeps a rateLimited problem\'s Retry-After and subproblems for the caller to back off (RFC 8555 §6.6, §6.7.1)', () => {
    const retryAfter = parseRetryAfter('120');
    const error = AcmeError.fromProblem({
      type: 'urn:ietf:params:acme:error:rateLimited',
      detail: 'too many certificates for example.test',
      subproblems: [{ type: 'urn:ietf:params:acme:error:rateLimited', detail: 'per name', identifier: { type: 'dns', value: 'a.example.test' } }],
    }, 429, retryAfter, 'newOrder');
    assert.ok(error.isRateLimited);
    assert.equal(error.status, 429);
    assert.equal(error.retryAfterSeconds, 120);
    assert.equal(error.subproblems?.[0]?.identifier?.value, 'a.example.test');
    assert.match(error.message, /newOrder: rateLimited \(429\): too many certificates for example\.test \[a\.example\.test: rateLimited: per name\]/);
    // RFC 9110 §10.2.3 allows an HTTP date too: one in the past means now.
    assert.equal(parseRetryAfter('Wed, 21 Oct 2015 07:28:00 GMT'), 0);
    assert.equal(parseRetryAfter(undefined), null);
    assert.equal(AcmeError.fromProblem('<html>bad gateway</html>', 502, null).type, 'about:blank', 'a body that is no problem document');
  });

  it('computes RFC 9773 §4.1\'s example CertID from its AKI and serial bytes', () => {
    const aki = Buffer.from('69885B6B87464041E1B37B847BA0AE2CDE01C8D4', 'hex');
    assert.equal(renewalCertId(aki, Buffer.from('0087654321', 'hex')), 'aYhba4dGQEHhs3uEe6CuLN4ByNQ.AIdlQyE');
  });

  it('reads that CertID from a certificate openssl made with the example\'s AKI and serial', () => {
    const dir = mkdtempSync(join(tmpdir(), 'acme-certid-'));
    try {
      writeFileSync(join(dir, 'ca.cnf'), [
        '[req]', 'distinguished_name = dn', 'prompt = no', '[dn]', 'CN = RFC 9773 example CA',
        '[ca_ext]', 'basicConstraints = critical, CA:TRUE', 'keyUsage = critical, keyCertSign',
        // The CA's subject key id becomes the leaf's AKI keyIdentifier.
        'subjectKeyIdentifier = 69:88:5B:6B:87:46:40:41:E1:B3:7B:84:7B:A0:AE:2C:DE:01:C8:D4',
        '[leaf_ext]', 'authorityKeyIdentifier = keyid:always', 'subjectAltName = DNS:example.test', '',
      ].join('\n'));
      const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes'];
      const run = (args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
      run(['req', '-x509', '-new', '-config', 'ca.cnf', '-extensions', 'ca_ext', ...ec, '-keyout', 'ca.key', '-out', 'ca.crt', '-days', '1']);
      run(['req', '-new', ...ec, '-keyout', 'leaf.key', '-subj', '/CN=example.test', '-out', 'leaf.csr']);
      run(['x509', '-req', '-in', 'leaf.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key', '-set_serial', '0x0087654321', '-days', '1', '-extfile', 'ca.cnf', '-extensions', 'leaf_ext', '-out', 'leaf.crt']);
      const info = certificateInfo(readFileSync(join(dir, 'leaf.crt'), 'utf8') + readFileSync(join(dir, 'ca.crt'), 'utf8'));
      assert.equal(info.certId, 'aYhba4dGQEHhs3uEe6CuLN4ByNQ.AIdlQyE');
      assert.equal(info.serial, '87654321');
      assert.deepEqual(info.dnsNames, ['example.test']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('makes the key authorization from the RFC 7638 §3.1 thumbprint of the public key alone', () => {
    // RFC 7638 §3.1's worked example is RSA; for EC the same rule: {crv,kty,x,y}, sorted, no spaces.
    const key = generateAccountKey();
    const { x, y } = publicJwk(key);
    const expected = execFileSync('openssl', ['dgst', '-sha256', '-binary'], { input: `{"crv":"P-256","kty":"EC","x":"${x}","y":"${y}"}` }).toString('base64url');
    assert.equal(jwkThumbprint(key), expected);
    assert.equal(keyAuthorization('tok-en_1', key), `tok-en_1.${expected}`);
  });

  it('refuses an account key that is not P-256, without printing it', async () => {
    const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey;
    await assert.rejects(AcmeClient.open({ directoryUrl: 'https://localhost:1/dir', accountKey: rsa }), (error: Error) => {
      assert.match(error.message, /EC P-256 private key/);
      assert.doesNotMatch(error.message, /PRIVATE KEY|MII/);
      return true;
    });
  });
});

/** openssl reading `input` on stdin; stderr joined in when asked (req -verify reports there). */
function openssl(args: string[], input: string, withStderr = false): string {
  if (!withStderr) return execFileSync('openssl', args, { input, encoding: 'utf8' });
  return execFileSync('sh', ['-c', 'openssl "$@" 2>&1', 'openssl', ...args], { input, encoding: 'utf8' });
}

/** A TLS handshake against a server holding `chainPem`: resolves `authorized` for a client trusting only `rootPem`. */
async function tlsHandshakeAuthorized(chainPem: string, keyPem: string, rootPem: string, servername: string): Promise<boolean> {
  const server = createTlsServer({ cert: chainPem, key: keyPem }, (socket) => socket.end());
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  try {
    const socket = connect({ host: '127.0.0.1', port: (server.address() as AddressInfo).port, servername, ca: rootPem });
    try {
      await once(socket, 'secureConnect');
      return socket.authorized;
    } finally {
      socket.destroy();
    }
  } finally {
    server.close();
  }
}
