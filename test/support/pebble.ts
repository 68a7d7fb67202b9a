import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../scripts/lib/local-services.js';
import { ensureLocalTls } from '../../scripts/lib/local-tls.js';
import { waitFor } from './wait.js';

/** Debian's pebble 2.4.0 (package `pebble`), a real ACME CA for tests. */
export const PEBBLE_BINARY = '/usr/bin/pebble';
export const CHALLTESTSRV_BINARY = '/usr/bin/pebble-challtestsrv';

export interface PebbleOptions {
  /** Where Pebble's VA connects for HTTP-01: in the real flow the edge's HTTP port. */
  httpPort: number;
  /** Names Pebble refuses with rejectedIdentifier (its `domainBlocklist`). */
  domainBlocklist?: string[];
  /** Lifetime of issued certificates in seconds (pebble's CertificateValidityPeriod); Pebble's default is five years. */
  certificateValiditySeconds?: number;
  /** Share of good nonces Pebble refuses as badNonce: 0 here unless a test wants them (Pebble's own default is 5). */
  nonceRejectPercent?: number;
}

export interface RunningPebble {
  directoryUrl: string;
  /** The CA of Pebble's own HTTPS listeners, for the ACME client to trust. */
  caPem: string;
  /** The root Pebble issues under (made at each start), from its management API. */
  rootPem(): Promise<string>;
  /** pebble-challtestsrv's DNS, Pebble's resolver: `127.0.0.1:<port>`. */
  dnsAddress: string;
  addA(host: string, ip: string): Promise<void>;
  addTxt(host: string, value: string): Promise<void>;
  clearTxt(host: string): Promise<void>;
  /** Everything both processes printed, for a failing test's message. */
  output(): string;
  stop(): Promise<void>;
}

/**
 * Pebble and pebble-challtestsrv (DNS and its management API only: Pebble's VA fetches
 * HTTP-01 from `httpPort`, where the test serves it) on free loopback ports, Pebble's
 * HTTPS under a CA made with scripts/lib/local-tls.ts for `localhost`. No sleeps in the VA,
 * no authorization reuse, so each order runs its challenge.
 */
export async function startPebble(options: PebbleOptions): Promise<RunningPebble> {
  for (const binary of [PEBBLE_BINARY, CHALLTESTSRV_BINARY]) {
    if (!existsSync(binary)) throw new Error(`${binary} is missing: apt-get install -y pebble`);
  }
  const dir = mkdtempSync(join(tmpdir(), 'test-pebble-'));
  const children: Array<{ child: ChildProcess; exited: Promise<void> }> = [];
  let output = '';
  const stop = async () => {
    for (const { child, exited } of children) {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    }
    rmSync(dir, { recursive: true, force: true });
  };
  const start = (binary: string, args: string[], env: Record<string, string>) => {
    // An environment of our own: no PEBBLE_* setting of the host leaks in.
    const child = spawn(binary, args, { env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env }, cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
    const label = binary.split('/').pop();
    const collect = (chunk: Buffer) => (output += `[${label}] ${chunk.toString()}`);
    child.stdout!.on('data', collect);
    child.stderr!.on('data', collect);
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    children.push({ child, exited });
    return child;
  };

  try {
    const tls = ensureLocalTls({ dir: join(dir, 'tls'), domain: 'localhost' });
    const caPem = readFileSync(tls.caFile, 'utf8');
    const [listenPort, managementPort, tlsPort, dnsPort, challManagementPort] = [await freePort(), await freePort(), await freePort(), await freePort(), await freePort()];
    const dnsAddress = `127.0.0.1:${dnsPort}`;
    const challManagement = `http://127.0.0.1:${challManagementPort}`;

    const challtestsrv = start(CHALLTESTSRV_BINARY, ['-http01', '', '-https01', '', '-tlsalpn01', '', '-dns01', dnsAddress, '-management', `127.0.0.1:${challManagementPort}`, '-defaultIPv4', '127.0.0.1', '-defaultIPv6', ''], {});
    await waitFor('pebble-challtestsrv to answer on its management port', async () => {
      if (challtestsrv.exitCode !== null) throw new Error(`pebble-challtestsrv exited: ${output}`);
      await send(`${challManagement}/clear-txt`, { host: 'probe.invalid.' });
      return true;
    }, 20_000, 100);

    const config = {
      pebble: {
        listenAddress: `127.0.0.1:${listenPort}`,
        managementListenAddress: `127.0.0.1:${managementPort}`,
        certificate: tls.certFile,
        privateKey: tls.keyFile,
        httpPort: options.httpPort,
        tlsPort,
        ocspResponderURL: '',
        externalAccountBindingRequired: false,
        domainBlocklist: options.domainBlocklist ?? [],
        ...(options.certificateValiditySeconds ? { certificateValidityPeriod: options.certificateValiditySeconds } : {}),
      },
    };
    writeFileSync(join(dir, 'pebble-config.json'), JSON.stringify(config, null, 2));
    const pebble = start(PEBBLE_BINARY, ['-config', join(dir, 'pebble-config.json'), '-dnsserver', dnsAddress], {
      PEBBLE_VA_NOSLEEP: '1',
      PEBBLE_WFE_NONCEREJECT: String(options.nonceRejectPercent ?? 0),
      PEBBLE_AUTHZREUSE: '0',
    });
    const directoryUrl = `https://localhost:${listenPort}/dir`;
    const managementUrl = `https://localhost:${managementPort}`;
    await waitFor('pebble to serve its directory', async () => {
      if (pebble.exitCode !== null) throw new Error(`pebble exited: ${output}`);
      const answer = await send(directoryUrl, null, caPem);
      return answer.status === 200 ? true : undefined;
    }, 20_000, 100);

    const challtestsrvCall = async (path: string, body: object) => {
      const answer = await send(`${challManagement}${path}`, body);
      if (answer.status !== 200) throw new Error(`pebble-challtestsrv ${path} answered ${answer.status}: ${answer.body}`);
    };
    return {
      directoryUrl,
      caPem,
      dnsAddress,
      async rootPem() {
        const answer = await send(`${managementUrl}/roots/0`, null, caPem);
        if (answer.status !== 200) throw new Error(`pebble's management API answered ${answer.status} for /roots/0`);
        return answer.body;
      },
      addA: (host, ip) => challtestsrvCall('/add-a', { host: fqdn(host), addresses: [ip] }),
      addTxt: (host, value) => challtestsrvCall('/set-txt', { host: fqdn(host), value }),
      clearTxt: (host) => challtestsrvCall('/clear-txt', { host: fqdn(host) }),
      output: () => output,
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** challtestsrv keys its records by fully qualified name, with the root's dot. */
const fqdn = (host: string) => (host.endsWith('.') ? host : `${host}.`);

/** A GET (body null) or a JSON POST; HTTPS trusts only `ca`. */
function send(url: string, body: object | null, ca?: string): Promise<{ status: number; body: string }> {
  const target = new URL(url);
  const request = target.protocol === 'https:' ? httpsRequest : httpRequest;
  const payload = body === null ? null : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = request(target, { method: payload === null ? 'GET' : 'POST', ...(ca ? { ca } : {}), timeout: 5000, headers: payload === null ? {} : { 'content-type': 'application/json' } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`${url} did not answer within 5 s`)));
    req.on('error', reject);
    req.end(payload ?? undefined);
  });
}
