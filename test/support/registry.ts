import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import bcrypt from 'bcryptjs';
import { freePort } from '../../scripts/lib/local-services.js';
import { waitFor } from './wait.js';

/** Debian's `docker-registry` (distribution 2.8), installed by scripts/ensure-deps.sh --test-tools. */
export const REGISTRY_BINARY = '/usr/bin/docker-registry';

export interface TestRegistry {
  /** `127.0.0.1:<port>`: the host part of image references, and the key of auth files. */
  host: string;
  username: string;
  password: string;
  /** A directory holding the test CA as `ca.crt`: podman's `--cert-dir`, PODMAN_REGISTRY_CERTS_DIR. */
  certDir: string;
  /** The CA's PEM, for Node's TLS clients. */
  ca: string;
  /** Everything the registry printed. */
  output(): string;
  close(): Promise<void>;
}

/**
 * A real registry (the distribution registry, as Debian packages it) on loopback for one
 * suite: a random port, TLS from a CA made here with the openssl CLI (so podman trusts it
 * only through `--cert-dir`, never the host's store), and htpasswd authentication with one
 * user whose password is random. The registry accepts only bcrypt in htpasswd files
 * (registry/auth/htpasswd/htpasswd.go), hashed here with bcryptjs.
 */
export async function startRegistry(): Promise<TestRegistry> {
  if (!existsSync(REGISTRY_BINARY)) throw new Error(`${REGISTRY_BINARY} is missing: apt-get install -y docker-registry (scripts/ensure-deps.sh --test-tools)`);
  const dir = mkdtempSync(join(tmpdir(), 'test-registry-'));
  const certDir = join(dir, 'certs');
  mkdirSync(certDir);
  const ca = makeCertificates(dir, certDir);
  const username = `agent-owner-${randomBytes(3).toString('hex')}`;
  const password = `pw-${randomBytes(12).toString('base64url')}`;
  writeFileSync(join(dir, 'htpasswd'), `${username}:${bcrypt.hashSync(password, 10)}\n`);
  const port = await freePort();
  const host = `127.0.0.1:${port}`;
  writeFileSync(
    join(dir, 'config.yml'),
    [
      'version: 0.1',
      'log:',
      '  level: info',
      'storage:',
      '  filesystem:',
      `    rootdirectory: ${join(dir, 'data')}`,
      'http:',
      `  addr: ${host}`,
      `  secret: ${randomBytes(16).toString('hex')}`,
      '  tls:',
      `    certificate: ${join(dir, 'server.crt')}`,
      `    key: ${join(dir, 'server.key')}`,
      'auth:',
      '  htpasswd:',
      '    realm: test-registry',
      `    path: ${join(dir, 'htpasswd')}`,
      '',
    ].join('\n'),
  );
  let output = '';
  // An environment of its own: REGISTRY_* variables would override the file.
  const child: ChildProcess = spawn(REGISTRY_BINARY, ['serve', join(dir, 'config.yml')], { env: { PATH: process.env.PATH }, stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  await waitFor('the registry to answer /v2/ (401 without credentials)', async () => {
    if (child.exitCode !== null) throw new Error(`the registry exited: ${output}`);
    return (await status(`https://${host}/v2/`, ca)) === 401 ? true : undefined;
  }, 20_000);
  return {
    host,
    username,
    password,
    certDir,
    ca,
    output: () => output,
    async close() {
      child.kill('SIGTERM');
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A CA, and a server certificate for 127.0.0.1 and localhost signed by it; returns the CA's PEM (also certDir/ca.crt). */
function makeCertificates(dir: string, certDir: string): string {
  const openssl = (args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  openssl(['req', '-x509', ...ec, '-keyout', 'ca.key', '-out', 'ca.crt', '-days', '2', '-subj', '/CN=agent-platform test registry CA',
    '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign']);
  openssl(['req', ...ec, '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=127.0.0.1']);
  writeFileSync(join(dir, 'server.ext'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n');
  openssl(['x509', '-req', '-in', 'server.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'server.crt', '-days', '2', '-extfile', 'server.ext']);
  const ca = readFileSync(join(dir, 'ca.crt'), 'utf8');
  writeFileSync(join(certDir, 'ca.crt'), ca);
  return ca;
}

/** The status of a GET, trusting only `ca`. */
export function status(url: string, ca: string, headers: Record<string, string> = {}): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(url, { ca, headers, timeout: 5000 }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('timeout', () => req.destroy(new Error('timed out')));
    req.on('error', reject);
    req.end();
  });
}
