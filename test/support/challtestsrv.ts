import { spawn, type ChildProcess } from 'node:child_process';
import { createSocket } from 'node:dgram';
import { freePort as freeTcpPort } from '../../scripts/lib/local-services.js';
import { waitFor } from './wait.js';

/**
 * Debian's pebble-challtestsrv as a DNS server of the test's own: it answers TXT and A
 * queries with what the test sets through its management API (and A queries it was not
 * told of with 127.0.0.1). Only its DNS and management listeners are opened, on free ports.
 */
export interface ChallTestSrv {
  /** host:port of its DNS server (UDP and TCP), as DNS_RESOLVER takes it. */
  dns: string;
  setTxt(host: string, value: string): Promise<void>;
  clearTxt(host: string): Promise<void>;
  addA(host: string, addresses: string[]): Promise<void>;
  stop(): Promise<void>;
}

/** challtestsrv keys its records by fully qualified name, with the root's dot. */
const fqdn = (host: string) => (host.endsWith('.') ? host : `${host}.`);

export async function startChallTestSrv(): Promise<ChallTestSrv> {
  const dnsPort = await freePort();
  const managementPort = await freePort();
  const child = spawn('pebble-challtestsrv', [
    '-http01', '', '-https01', '', '-tlsalpn01', '',
    '-dns01', `127.0.0.1:${dnsPort}`,
    '-management', `127.0.0.1:${managementPort}`,
  ], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (chunk) => (stderr += chunk));
  const management = `http://127.0.0.1:${managementPort}`;
  const post = async (path: string, body: object): Promise<void> => {
    const response = await fetch(`${management}${path}`, { method: 'POST', body: JSON.stringify(body) });
    if (!response.ok) throw new Error(`challtestsrv ${path}: ${response.status} ${await response.text()}`);
  };
  try {
    // Any answer of the management API means it listens; the DNS server is opened before it.
    await waitFor('challtestsrv', async () => (child.exitCode === null ? await fetch(`${management}/`).then(() => true, () => undefined) : Promise.reject(new Error(`challtestsrv exited: ${stderr}`))), 10_000, 50);
  } catch (error) {
    child.kill();
    throw error;
  }
  return {
    dns: `127.0.0.1:${dnsPort}`,
    setTxt: (host, value) => post('/set-txt', { host: fqdn(host), value }),
    clearTxt: (host) => post('/clear-txt', { host: fqdn(host) }),
    addA: (host, addresses) => post('/add-a', { host: fqdn(host), addresses }),
    stop: () => stopProcess(child),
  };
}

function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill();
  });
}

/** A port free for both TCP and UDP on 127.0.0.1 (DNS listens on both), picked as freeTcpPort picks. */
async function freePort(): Promise<number> {
  for (;;) {
    const port = await freeTcpPort();
    const udpFree = await new Promise<boolean>((resolve) => {
      const socket = createSocket('udp4');
      socket.once('error', () => resolve(false));
      socket.bind(port, '127.0.0.1', () => socket.close(() => resolve(true)));
    });
    if (udpFree) return port;
  }
}
