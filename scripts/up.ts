import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { startPostgres, startRedis, type RunningService } from './lib/local-services.js';

/**
 * Runs the platform on this host: Postgres and Redis under .data/ (unless DATABASE_URL
 * and REDIS_URL point elsewhere), then the control API. Ctrl-C stops everything it
 * started; the next run reuses .data/, so nothing is lost.
 */
const root = resolve(import.meta.dirname, '..');
const dataDir = resolve(process.env.PLATFORM_DATA_DIR ?? join(root, '.data'));
const services: RunningService[] = [];
const children: ChildProcess[] = [];

async function main(): Promise<void> {
  mkdirSync(dataDir, { recursive: true, mode: 0o755 });
  const env: Record<string, string> = { ...(process.env as Record<string, string>) };

  if (!env.DATABASE_URL) {
    console.log(`Starting Postgres in ${join(dataDir, 'postgres')}`);
    const postgres = await startPostgres({ dataDir: join(dataDir, 'postgres'), port: Number(env.UP_POSTGRES_PORT ?? 7432), database: 'platform' });
    services.push(postgres);
    env.DATABASE_URL = postgres.url;
  }
  if (!env.REDIS_URL) {
    console.log(`Starting Redis in ${join(dataDir, 'redis')}`);
    const redis = await startRedis({ dataDir: join(dataDir, 'redis'), port: Number(env.UP_REDIS_PORT ?? 7379), persistent: true });
    services.push(redis);
    env.REDIS_URL = redis.url;
  }
  if (!env.MASTER_KEY && !env.MASTER_KEY_FILE) {
    const keyFile = join(dataDir, 'master.key');
    // Created once: losing it would make every stored model key and secret unreadable.
    if (!existsSync(keyFile)) writeFileSync(keyFile, randomBytes(32).toString('base64'), { mode: 0o600 });
    env.MASTER_KEY_FILE = keyFile;
  }

  const control = start('control', join(root, 'control/main.ts'), env);
  const port = env.CONTROL_PORT ?? '7070';
  const host = env.CONTROL_HOST ?? '127.0.0.1';
  const base = `http://${host}:${port}/v1`;
  await waitForHealth(`http://${host}:${port}/healthz`, control);

  start('authz', join(root, 'authz/main.ts'), env);
  const edgePort = env.EDGE_PORT ?? '7080';
  const edge = hasEnvoy()
    ? startCommand('envoy', 'envoy', ['-c', join(root, 'envoy/envoy.yaml'), '--log-level', 'warn'], env)
    : start('edge', join(root, 'envoy/local-edge/main.ts'), { ...env, EDGE_PORT: edgePort, AUTHZ_ADDRESS: `127.0.0.1:${env.AUTHZ_GRPC_PORT ?? '7091'}` });
  await waitForPort(Number(edgePort), edge);

  console.log(`
Platform is up.
  Control API  ${base}          (OpenAPI: ${base}/openapi.json)
  Edge         http://127.0.0.1:${edgePort}  (${hasEnvoy() ? 'Envoy' : 'the local edge: no envoy binary on PATH'}); agents at http://<slug>.${env.AGENT_DOMAIN ?? 'agents.localhost'}:${edgePort}
  Data         ${dataDir}

Sign in (registration mode: ${env.REGISTRATION_MODE ?? 'open'}):
  curl -s ${base}/auth/register -H 'content-type: application/json' \\
    -d '{"email":"you@example.com","password":"a long password","name":"You"}'
  then send the returned token as  Authorization: Bearer <token>
  Operator commands:  npm run admin -- help

Ctrl-C stops everything.`);
}

/** Node runs the TypeScript entry point itself (no npx in between), so signals reach it. */
function start(name: string, entryPoint: string, env: Record<string, string>): ChildProcess {
  return startCommand(name, process.execPath, ['--import', 'tsx', entryPoint], env);
}

function hasEnvoy(): boolean {
  return (process.env.PATH ?? '').split(':').some((dir) => existsSync(join(dir, 'envoy')));
}

async function waitForPort(port: number, child: ChildProcess): Promise<void> {
  const { connect } = await import('node:net');
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline && child.exitCode === null) {
    const open = await new Promise<boolean>((done) => {
      const socket = connect(port, '127.0.0.1');
      socket.once('connect', () => { socket.destroy(); done(true); });
      socket.once('error', () => done(false));
    });
    if (open) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`nothing listens on port ${port} after 60 s`);
}

function startCommand(name: string, command: string, args: string[], env: Record<string, string>): ChildProcess {
  const child = spawn(command, args, { cwd: root, env, stdio: 'inherit' });
  child.on('exit', (code, signal) => {
    if (!shuttingDown) {
      console.error(`${name} exited (${signal ?? code}); stopping the platform`);
      void shutdown(1);
    }
  });
  children.push(child);
  return child;
}

async function waitForHealth(url: string, child: ChildProcess): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline && child.exitCode === null) {
    try {
      if ((await fetch(url)).ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`${url} did not answer within 60 s`);
}

let shuttingDown = false;
async function shutdown(code: number): Promise<void> {
  if (shuttingDown) return;
  shuttingDown = true;
  await Promise.all(
    children.map(
      (child) =>
        new Promise<void>((done) => {
          if (child.exitCode !== null) return done();
          child.once('exit', () => done());
          child.kill('SIGTERM');
        }),
    ),
  );
  for (const service of services.reverse()) await service.stop().catch((e) => console.error(e));
  process.exit(code);
}

process.on('SIGINT', () => void shutdown(0));
process.on('SIGTERM', () => void shutdown(0));
main().catch(async (error) => {
  console.error(error instanceof Error ? error.message : error);
  await shutdown(1);
});
