import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes, randomInt } from 'node:crypto';
import { chmodSync, chownSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';

/**
 * Postgres and Redis as plain child processes in a folder of ours: `.data/` for
 * `npm run up`, a temp dir for `npm test`. Shared so both start them the same way.
 */

export interface RunningService {
  url: string;
  /** The server's main process (Postgres's postmaster, whose children serve the connections): for tests that freeze it. */
  pid: number;
  stop(): Promise<void>;
}

const isRoot = () => process.getuid?.() === 0;

/** The lowest port freePort picks: above the well-known and most registered ones. */
const FREE_PORT_FLOOR = 10_000;

/**
 * A TCP port free now on every address, for a server that another process, or a later
 * step, binds. It is picked below the kernel's ephemeral range (`ip_local_port_range`,
 * 32768 to 60999 by default), from which the kernel gives ports to outgoing connections and
 * to listeners on port 0: a port from that range, free when picked, can be taken by any
 * client socket before its server binds it, and a CI run lost one so (EADDRINUSE). Below it,
 * only an explicit bind can take it. Where that range leaves too little below it, the
 * kernel picks, as on port 0.
 */
export async function freePort(): Promise<number> {
  const ephemeralStart = ephemeralRangeStart();
  if (ephemeralStart !== undefined && ephemeralStart - FREE_PORT_FLOOR >= 1_000) {
    for (let attempt = 0; attempt < 100; attempt += 1) {
      const port = FREE_PORT_FLOOR + randomInt(ephemeralStart - FREE_PORT_FLOOR);
      if ((await listenOnce(port)) !== undefined) return port;
    }
  }
  const picked = await listenOnce(0);
  if (picked === undefined) throw new Error('no free TCP port: even the kernel found none');
  return picked;
}

/** Where the kernel's ephemeral ports start (Linux's net.ipv4.ip_local_port_range); undefined where it does not say. */
function ephemeralRangeStart(): number | undefined {
  try {
    const start = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    return Number.isInteger(start) ? start : undefined;
  } catch {
    return undefined;
  }
}

/** Listens on `port` of every address and closes again: the port it had, or undefined when it is taken. */
function listenOnce(port: number): Promise<number | undefined> {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once('error', () => resolve(undefined));
    server.listen(port, '0.0.0.0', () => {
      const bound = (server.address() as { port: number }).port;
      server.close(() => resolve(bound));
    });
  });
}

/** The newest Debian PostgreSQL server binaries, or the ones on PATH. */
export function postgresBinDir(): string {
  const root = '/usr/lib/postgresql';
  if (existsSync(root)) {
    const versions = readdirSync(root).filter((v) => existsSync(join(root, v, 'bin', 'pg_ctl'))).sort((a, b) => Number(b) - Number(a));
    if (versions[0]) return join(root, versions[0], 'bin');
  }
  try {
    return execFileSync('sh', ['-c', 'dirname "$(command -v pg_ctl)"'], { encoding: 'utf8' }).trim();
  } catch {
    throw new Error('PostgreSQL server binaries not found: apt-get install -y postgresql (scripts/ensure-system-deps.sh does it)');
  }
}

/** Postgres refuses to run as root, so as root it runs as the `postgres` system user. */
function runAsOwner(command: string, args: string[]): void {
  if (isRoot()) {
    execFileSync('runuser', ['-u', 'postgres', '--', command, ...args], { stdio: 'pipe' });
  } else {
    execFileSync(command, args, { stdio: 'pipe' });
  }
}

function ownedByPostgres(path: string): void {
  if (!isRoot()) return;
  const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
  const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
  chownSync(path, uid, gid);
}

export interface PostgresOptions {
  dataDir: string;
  port: number;
  database: string;
  /** Off for a throwaway cluster (the test suites'), which needs no durability and runs faster without it. On unless given. */
  fsync?: boolean;
}

/**
 * Starts (initialising on first use) a cluster in `dataDir`, listening on 127.0.0.1
 * only, with password authentication; the password is kept in `dataDir/../postgres.password`.
 */
export async function startPostgres({ dataDir, port, database, fsync = true }: PostgresOptions): Promise<RunningService> {
  const bin = postgresBinDir();
  const parent = join(dataDir, '..');
  mkdirSync(parent, { recursive: true });
  const passwordFile = join(parent, 'postgres.password');
  if (!existsSync(join(dataDir, 'PG_VERSION'))) {
    const password = randomBytes(18).toString('base64url');
    mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    ownedByPostgres(dataDir);
    // initdb wants an empty data dir, so the one-time password file sits beside it.
    const pwfile = join(parent, '.postgres-init-password');
    writeFileSync(pwfile, password, { mode: 0o600 });
    ownedByPostgres(pwfile);
    try {
      runAsOwner(join(bin, 'initdb'), ['-D', dataDir, '-U', 'platform', `--pwfile=${pwfile}`, '--auth-host=scram-sha-256', '--auth-local=scram-sha-256', '-E', 'UTF8', '--no-locale']);
    } finally {
      rmSync(pwfile, { force: true });
    }
    writeFileSync(passwordFile, password, { mode: 0o600 });
    chmodSync(passwordFile, 0o600);
  }
  const password = readFileSync(passwordFile, 'utf8').trim();
  const socketDir = dataDir;
  runAsOwner(join(bin, 'pg_ctl'), [
    '-D', dataDir, '-l', join(dataDir, 'server.log'), '-w', '-t', '60',
    '-o', `-p ${port} -c listen_addresses=127.0.0.1 -k ${socketDir} -c max_connections=200 -c fsync=${fsync ? 'on' : 'off'}`,
    'start',
  ]);
  const adminUrl = `postgres://platform:${encodeURIComponent(password)}@127.0.0.1:${port}/postgres`;
  await ensureDatabase(adminUrl, database);
  return {
    url: `postgres://platform:${encodeURIComponent(password)}@127.0.0.1:${port}/${database}`,
    // The first line of postmaster.pid (PostgreSQL docs, "Database File Layout").
    pid: Number(readFileSync(join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]),
    stop: async () => {
      runAsOwner(join(bin, 'pg_ctl'), ['-D', dataDir, '-m', 'fast', '-w', 'stop']);
    },
  };
}

async function ensureDatabase(adminUrl: string, database: string): Promise<void> {
  const { default: pg } = await import('pg');
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    const found = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [database]);
    if (found.rowCount === 0) await client.query(`CREATE DATABASE "${database.replace(/"/g, '')}"`);
  } finally {
    await client.end();
  }
}

export interface RedisOptions {
  dataDir: string;
  port: number;
  /** Append-only persistence for `npm run up`; tests need none. */
  persistent: boolean;
}

/** The redis-server command line for `options`; `npm run up` runs it under its supervisor. */
export function redisServerCommand({ dataDir, port, persistent }: RedisOptions): { command: string; args: string[] } {
  mkdirSync(dataDir, { recursive: true });
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--dir', dataDir, '--protected-mode', 'yes', '--save', ''];
  if (persistent) args.push('--appendonly', 'yes');
  return { command: redisServerBinary(), args };
}

export async function startRedis(options: RedisOptions): Promise<RunningService> {
  const { command, args } = redisServerCommand(options);
  const child: ChildProcess = spawn(command, args, { stdio: ['ignore', 'ignore', 'inherit'] });
  await waitForPort(options.port, child, 'redis-server');
  return {
    url: `redis://127.0.0.1:${options.port}`,
    pid: child.pid!,
    stop: () =>
      new Promise((resolve) => {
        // A child killed by a signal has exitCode null and signalCode set, and its exit event has passed.
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

function redisServerBinary(): string {
  for (const candidate of ['/usr/bin/redis-server', '/usr/local/bin/redis-server']) if (existsSync(candidate)) return candidate;
  throw new Error('redis-server not found: apt-get install -y redis-server (scripts/ensure-system-deps.sh does it)');
}

async function waitForPort(port: number, child: ChildProcess, name: string): Promise<void> {
  const { connect } = await import('node:net');
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`${name} exited (${child.signalCode ?? child.exitCode})`);
    const open = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1');
      socket.once('connect', () => { socket.destroy(); resolve(true); });
      socket.once('error', () => resolve(false));
    });
    if (open) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`${name} did not listen on port ${port} within 20 s`);
}
