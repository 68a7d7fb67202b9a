import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { once } from 'node:events';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, symlinkSync } from 'node:fs';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLimitedTlsServer } from '../control/http/client-limits.js';
import { openCertificateStore, type CertificateStore } from '../envoy/local-edge/certificate-store.js';
import { TLS_SERVER_POLICY } from '../envoy/local-edge/tls-policy.js';
import { ensureLocalTls } from '../scripts/lib/local-tls.js';
import { waitFor } from './support/wait.js';

/**
 * The local edge's certificate store on real files: which change it notices (its
 * directory's watch, or its periodic check), and the TLS server's own bounds.
 */
describe('local edge certificate store', function () {
  this.timeout(30_000);
  const domain = 'agents.localhost';
  let root: string;
  let store: CertificateStore | undefined;
  let pairs = 0;
  const mint = () => {
    const dir = join(root, `pair-${++pairs}`);
    mkdirSync(dir);
    for (const file of ['ca.crt', 'ca.key']) copyFileSync(join(root, 'ca', file), join(dir, file));
    return ensureLocalTls({ dir, domain });
  };
  const serialOf = (file: string) => new X509Certificate(readFileSync(file)).serialNumber;

  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'cert-store-'));
    ensureLocalTls({ dir: join(root, 'ca'), domain });
  });
  afterEach(() => {
    store?.close();
    store = undefined;
    rmSync(root, { recursive: true, force: true });
  });

  it("notices a pair moved into its directory through the directory's watch alone", async function () {
    const first = mint();
    store = await openCertificateStore({ certFile: first.certFile, keyFile: first.keyFile, policy: TLS_SERVER_POLICY, checkIntervalMs: 3_600_000 });
    const next = mint();
    renameSync(next.keyFile, first.keyFile);
    renameSync(next.certFile, first.certFile);
    const serial = serialOf(first.certFile);
    await waitFor('the watch to reload the pair', async () => (store!.current().leaf.serialNumber === serial ? true : undefined), 5_000, 50);
    assert.equal(serialOf(first.certFile), serial);
  });

  it('notices a change its watch cannot see (files behind symlinks into another directory) through the periodic check', async function () {
    const first = mint();
    const live = join(root, 'live');
    mkdirSync(live);
    symlinkSync(first.certFile, join(live, 'tls.crt'));
    symlinkSync(first.keyFile, join(live, 'tls.key'));
    const reloads: string[] = [];
    store = await openCertificateStore({ certFile: join(live, 'tls.crt'), keyFile: join(live, 'tls.key'), policy: TLS_SERVER_POLICY, checkIntervalMs: 300 });
    store.onChange(() => reloads.push(store!.current().leaf.serialNumber));
    const next = mint();
    renameSync(next.keyFile, first.keyFile);
    renameSync(next.certFile, first.certFile);
    await waitFor('the periodic check to reload the pair', async () => (reloads.length > 0 ? true : undefined), 5_000, 50);
    assert.deepEqual(reloads, [serialOf(first.certFile)]);
  });

  it('refuses to open with files that are no PEM pair, naming the problem and never the key', async function () {
    const first = mint();
    await assert.rejects(openCertificateStore({ certFile: first.keyFile, keyFile: first.keyFile, policy: TLS_SERVER_POLICY }), /no readable PEM certificate/);
    await assert.rejects(openCertificateStore({ certFile: first.certFile, keyFile: first.certFile, policy: TLS_SERVER_POLICY }), (error: Error) => {
      assert.match(error.message, /no readable unencrypted PEM private key/);
      assert.ok(!error.message.includes('PRIVATE KEY-----'), 'no key material in the message');
      return true;
    });
  });

  describe('the HTTPS server of client-limits.ts', function () {
    const limits = { headersTimeoutMs: 500, requestTimeoutMs: 2_000, maxConnectionsPerAddress: 2 };
    const closed = (socket: Socket) => new Promise<number>((resolve) => {
      const started = Date.now();
      socket.on('error', () => undefined);
      socket.once('close', () => resolve(Date.now() - started));
    });

    it('cuts a client that never finishes its handshake at the headers deadline, and caps connections per address', async function () {
      const pair = mint();
      const server = createLimitedTlsServer(limits, { ...TLS_SERVER_POLICY, cert: readFileSync(pair.certFile), key: readFileSync(pair.keyFile) }, (_request, response) => response.end());
      server.listen(0, '127.0.0.1');
      await once(server, 'listening');
      const { port } = server.address() as AddressInfo;
      try {
        // TCP only, no ClientHello: Node's default handshake timeout would be 120 s.
        const silent = connect(port, '127.0.0.1');
        const silentFor = await closed(silent);
        assert.ok(silentFor >= 400 && silentFor < 3_000, `closed after ${silentFor} ms`);

        const held = [connect(port, '127.0.0.1'), connect(port, '127.0.0.1')];
        await Promise.all(held.map((socket) => once(socket, 'connect')));
        const third = connect(port, '127.0.0.1');
        assert.ok((await closed(third)) < 400, 'the third connection from one address is closed at once');
        for (const socket of held) socket.destroy();
      } finally {
        server.closeAllConnections();
        server.close();
      }
    });
  });
});
