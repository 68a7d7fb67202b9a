import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { redisServerCommand, startPostgres, type RunningService } from './lib/local-services.js';
import { Supervisor, UP_SUPERVISION, type Component } from './lib/supervisor.js';
import { envoyBootstrapFor, upAuthzWiring, upXdsSocket } from './lib/up-authz.js';
import { envoyRedirectArgs, envoyTlsFor, upEdgeTls, type UpEdgeTls } from './lib/up-edge-tls.js';
import { trustInstructions } from './lib/local-tls.js';
import { readUpSettings, type UpSettings } from './lib/up-settings.js';
import { loadEnvFile } from '../contract/env-file.js';
import { formatGrpcTarget, isUnixSocket, type GrpcTarget } from '../contract/grpc-target.js';
import { DEFAULT_AGENT_SUBNET_POOL } from '../contract/agent-subnet-pool.js';

/**
 * Runs the platform on this host: Postgres and Redis under .data/ (unless DATABASE_URL
 * and REDIS_URL point elsewhere), then the control API, authz and the edge, under a
 * supervisor that restarts whichever exits (scripts/lib/supervisor.ts). Ctrl-C (or
 * SIGTERM), or a component that keeps crashing, stops everything it started; the next
 * run reuses .data/, so nothing is lost.
 */
const root = resolve(import.meta.dirname, '..');
const services: RunningService[] = [];
const supervisor = new Supervisor({
  ...UP_SUPERVISION,
  log: (line) => console.error(`[up] ${line}`),
  onGiveUp: () => void shutdown(1),
});

async function main(): Promise<void> {
  const envFile = loadEnvFile(process.env, process.argv.slice(2));
  const settings = readUpSettings(process.env, root);
  const { dataDir } = settings;
  mkdirSync(dataDir, { recursive: true, mode: 0o755 });
  const env = { ...settings.environment };
  // The components load the same file, adding nothing: not a .env of the checkout instead.
  if (envFile) env.ENV_FILE = envFile;

  if (!env.DATABASE_URL) {
    console.log(`Starting Postgres in ${join(dataDir, 'postgres')}`);
    // pg_ctl runs Postgres as a daemon, whose postmaster restarts crashed backends itself.
    const postgres = await startPostgres({ dataDir: join(dataDir, 'postgres'), port: settings.postgresPort, database: 'platform', fsync: settings.postgresFsync });
    services.push(postgres);
    env.DATABASE_URL = postgres.url;
  }
  if (!env.REDIS_URL) {
    console.log(`Starting Redis in ${join(dataDir, 'redis')}`);
    const port = settings.redisPort;
    const { command, args } = redisServerCommand({ dataDir: join(dataDir, 'redis'), port, persistent: true });
    supervisor.start({ name: 'redis', command, args, env, cwd: root, stdout: 'ignore' });
    if (!(await waitFor(`Redis on port ${port}`, () => isListening(port)))) return;
    env.REDIS_URL = `redis://127.0.0.1:${port}`;
  }
  if (!env.MASTER_KEYS && !env.MASTER_KEYS_FILE && !env.MASTER_KEY && !env.MASTER_KEY_FILE) {
    const keyFile = join(dataDir, 'master.key');
    // Created once: losing it would make every stored model key and secret unreadable.
    if (!existsSync(keyFile)) writeFileSync(keyFile, randomBytes(32).toString('base64'), { mode: 0o600 });
    // A list of one: a rotation puts a new key on a line above it (docs/operations.md, "Master-key rotation").
    env.MASTER_KEYS_FILE = keyFile;
  }

  // authz serves gRPC on a Unix socket in the data dir, no TCP port: only the edge talks to it.
  const authz = upAuthzWiring(env, dataDir);
  Object.assign(env, authz.env);
  // HTTPS on EDGE_HTTPS_PORT: the operator's certificate, or a local CA's in .data/tls (docs/edge.md, "HTTPS").
  const tls = edgeTls(env, dataDir);
  Object.assign(env, tls?.env);
  // Besides Postgres, Redis and the control API (from their settings), the podman driver
  // fences and probes authz's metrics, the edge and Envoy's admin and stats listener (and
  // authz's gRPC port, should AUTHZ_GRPC_LISTEN open one): no agent may reach them.
  env.PODMAN_PROTECTED_ENDPOINTS ??= [
    ...[env.AUTHZ_METRICS_PORT ?? '7092', env.EDGE_PORT ?? '7080', ...(tls ? [env.EDGE_HTTPS_PORT!] : []), '9901', '9902'].map((port) => `127.0.0.1:${port}`),
    ...(isUnixSocket(authz.target) ? [] : [formatGrpcTarget(authz.target)]),
  ].join(',');
  // The edge forwards only into the agent subnet pool the driver holds unreachable (docs/orchestration.md, "Addresses").
  env.EDGE_UPSTREAM_SUBNETS ??= env.PODMAN_AGENT_SUBNETS ?? DEFAULT_AGENT_SUBNET_POOL;
  // A single-host install: the receivers of its webhooks (a local CI, a chat bridge) are likely on this host or its network.
  env.WEBHOOK_ALLOW_PRIVATE_NETWORKS ??= 'true';
  // The podman driver's files (replicas' token directories among them) with the rest of up's
  // state: they must outlive a restart of the control API, which $TMPDIR does not promise.
  env.PODMAN_STATE_DIR ??= join(dataDir, 'podman');
  supervisor.start(node('control', 'control/main.ts', env));
  const port = env.CONTROL_PORT ?? '7070';
  const host = env.CONTROL_HOST ?? '127.0.0.1';
  const base = `http://${host}:${port}/v1`;
  if (!(await waitFor(`http://${host}:${port}/healthz`, () => isHealthy(`http://${host}:${port}/healthz`)))) return;

  // An installed Envoy takes its HTTPS listener from authz by LDS: authz reads the same files.
  const envoy = hasEnvoy(env) ? envoyFiles(authz.target, env, settings) : null;
  supervisor.start(node('authz', 'authz/main.ts', { ...env, ...envoy?.authzEnv }));
  const { edgePort } = settings;
  supervisor.start(
    envoy
      ? { name: 'envoy', command: 'envoy', args: ['-c', envoy.bootstrapFile, '--log-level', 'warn', ...envoyRedirectArgs(env.EDGE_HTTP_REDIRECT === 'true')], env, cwd: root }
      // The console is served by the control API: "Try it" calls agents from its origin.
      : node('edge', 'envoy/local-edge/main.ts', { CONSOLE_ORIGIN: `http://${host}:${port}`, ...env, EDGE_PORT: String(edgePort), AUTHZ_ADDRESS: formatGrpcTarget(authz.target) }),
  );
  if (!(await waitFor(`the edge on port ${edgePort}`, () => isListening(edgePort)))) return;

  console.log(`
Platform is up.
  Control API  ${base}          (OpenAPI: ${base}/openapi.json)
  Metrics      http://${host}:${env.CONTROL_METRICS_PORT ?? '7072'}/metrics (control API), http://127.0.0.1:${env.AUTHZ_METRICS_PORT ?? '7092'}/metrics (authz)
  authz        gRPC on ${formatGrpcTarget(authz.target)}, for the edge only
  Edge         http://127.0.0.1:${edgePort}${tls ? `, https://127.0.0.1:${env.EDGE_HTTPS_PORT}` : ''}  (${hasEnvoy(env) ? 'Envoy' : 'the local edge: no envoy binary on PATH'}); agents at http://<slug>.${env.AGENT_DOMAIN ?? 'agents.localhost'}:${edgePort}${tls ? ` and https://<slug>.${env.AGENT_DOMAIN ?? 'agents.localhost'}:${env.EDGE_HTTPS_PORT}` : ''}
  Data         ${dataDir}
${tls?.caFile ? `
HTTPS uses a local CA (${tls.caFile}${tls.made === 'nothing' ? '' : `, ${tls.made} made now`}). To trust it:
${trustInstructions(tls.caFile, `https://<slug>.${env.AGENT_DOMAIN ?? 'agents.localhost'}:${env.EDGE_HTTPS_PORT}/health`).replace(/^/gm, '  ')}
` : ''}
Sign in (registration mode: ${env.REGISTRATION_MODE ?? 'open'}):
  curl -s ${base}/auth/register -H 'content-type: application/json' \\
    -d '{"email":"you@example.com","password":"a long password","name":"You"}'
  then send the returned token as  Authorization: Bearer <token>
  Operator commands:  npm run admin -- help

A component that exits is restarted; Ctrl-C stops everything.`);
}

/** Node runs the TypeScript entry point itself (no npx in between), so signals reach it. */
function node(name: string, entryPoint: string, env: Record<string, string>): Component {
  return { name, command: process.execPath, args: ['--import', 'tsx', join(root, entryPoint)], env, cwd: root };
}

/**
 * envoy/envoy.yaml as envoy.yaml in the data dir, its authz and authz_xds clusters at this
 * run's authz sockets; envoy/tls-listener.yaml beside it, the HTTPS listener authz serves
 * Envoy by LDS, on EDGE_HTTPS_PORT with envoy/tls-sds.yaml naming the edge's certificate; and
 * the settings that point authz's xDS server at both files.
 */
function envoyFiles(target: GrpcTarget, env: Record<string, string>, { dataDir, edgeHttpsPort }: UpSettings): { bootstrapFile: string; authzEnv: Record<string, string> } {
  if (!env.EDGE_TLS_CERT_FILE) throw new Error("Envoy's HTTPS listener needs a certificate: install openssl, or set EDGE_TLS_CERT_FILE and EDGE_TLS_KEY_FILE");
  const xdsSocket = upXdsSocket(env, dataDir);
  const sdsFile = join(dataDir, 'envoy-tls', 'sds.yaml');
  const { bootstrap, tlsListener, sds } = envoyTlsFor(
    envoyBootstrapFor(readFileSync(join(root, 'envoy/envoy.yaml'), 'utf8'), target, xdsSocket),
    readFileSync(join(root, 'envoy/tls-listener.yaml'), 'utf8'),
    readFileSync(join(root, 'envoy/tls-sds.yaml'), 'utf8'),
    { certFile: resolve(env.EDGE_TLS_CERT_FILE), keyFile: resolve(env.EDGE_TLS_KEY_FILE!), sdsFile, httpsPort: edgeHttpsPort },
  );
  mkdirSync(dirname(sdsFile), { recursive: true, mode: 0o700 });
  writeFileSync(sdsFile, sds);
  const bootstrapFile = join(dataDir, 'envoy.yaml');
  writeFileSync(bootstrapFile, bootstrap);
  const tlsListenerFile = join(dataDir, 'envoy-tls-listener.yaml');
  writeFileSync(tlsListenerFile, tlsListener);
  return {
    bootstrapFile,
    authzEnv: { AUTHZ_XDS_SOCKET: xdsSocket, AUTHZ_XDS_TLS_LISTENER_FILE: tlsListenerFile, AUTHZ_XDS_ENVOY_CONFIG_FILE: bootstrapFile },
  };
}

/** The edge's HTTPS settings, or null (plain HTTP only, said loudly) when no certificate can be had. */
function edgeTls(env: Record<string, string>, dataDir: string): UpEdgeTls | null {
  try {
    return upEdgeTls(env, dataDir);
  } catch (error) {
    if (hasEnvoy(env)) throw error;
    console.error(`[up] no HTTPS on the edge: ${error instanceof Error ? error.message : error}`);
    return null;
  }
}

/** An envoy binary on the PATH the platform's processes get. */
function hasEnvoy(env: Record<string, string>): boolean {
  return (env.PATH ?? '').split(':').some((dir) => existsSync(join(dir, 'envoy')));
}

/**
 * Polls `ready` for up to 60 s (the supervisor restarts a component that dies meanwhile);
 * false when the platform is being stopped instead, so that start-up goes no further.
 */
async function waitFor(what: string, ready: () => Promise<boolean>): Promise<boolean> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline && !shuttingDown) {
    if (await ready()) return true;
    await new Promise((r) => setTimeout(r, 200));
  }
  if (!shuttingDown) throw new Error(`${what} did not answer within 60 s`);
  return false;
}

const isHealthy = async (url: string) => fetch(url).then((r) => r.ok, () => false);

const isListening = (port: number) =>
  new Promise<boolean>((done) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => { socket.destroy(); done(true); });
    socket.once('error', () => done(false));
  });

let shuttingDown = false;
/** Stops every child (each waited for, SIGKILL past a deadline), then Postgres, then exits. */
async function shutdown(code: number): Promise<void> {
  if (shuttingDown) return;
  shuttingDown = true;
  console.error('[up] stopping the platform');
  await supervisor.stop();
  for (const service of services.reverse()) await service.stop().catch((e) => console.error(e));
  console.error('[up] stopped');
  process.exit(code);
}

process.on('SIGINT', () => void shutdown(0));
process.on('SIGTERM', () => void shutdown(0));
// A closed terminal: the children, in process groups of their own, would not hear of it.
process.on('SIGHUP', () => void shutdown(0));
main().catch(async (error) => {
  console.error(error instanceof Error ? error.message : error);
  await shutdown(1);
});
