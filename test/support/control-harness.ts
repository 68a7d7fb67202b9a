import { createHash, randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import type { Server } from 'node:http';
import { createServer as createTcpServer, type AddressInfo, type Server as TcpServer } from 'node:net';
import type { Knex } from 'knex';
import type { DestinationStream } from 'pino';
import type { Redis } from 'ioredis';
import { systemClock } from '../../contract/clock.js';
import { ManualClock } from './manual-clock.js';
import { createOrchestrator } from '../../control/orchestrator/create.js';
import { podmanRuntime, stateDirectoryOf } from '../../control/orchestrator/podman/host.js';
import { podmanEnvironmentOf } from '../../control/orchestrator/podman/child-environment.js';
import type { PassRecord } from '../../control/services/periodic-pass.js';
import type { Orchestrator } from '../../control/orchestrator/types.js';
import { ensureTestImage, TEST_IMAGE } from './test-image.js';
import { inMemoryDriver } from './in-memory-driver.js';
import { loadConfig, type Config } from '../../control/config/config.js';
import { buildControl, type Control } from '../../control/compose.js';
import { connectDatabase, DEFAULT_POOL } from '../../control/db/database.js';
import { createLogger } from '../../control/config/logger.js';
import { connectRedis } from '../../control/db/redis.js';
import { createLimitedServer } from '../../control/http/client-limits.js';
import { TEMPLATE_DATABASE } from './global.js';
import { OpenApiChecker } from './openapi-checker.js';
import type { BillingProvider } from '../../control/billing/provider.js';

export interface ApiResponse<T = any> {
  status: number;
  body: T;
  headers: Headers;
}

export interface RequestOptions {
  token?: string;
  body?: unknown;
  /** Sent as-is, for malformed or oversized bodies. */
  rawBody?: string;
  headers?: Record<string, string>;
}

export interface TestControl {
  baseUrl: string;
  /** The agent services endpoint (sessions), served as control/main.ts serves it on AGENT_SERVICES_PORT, here on a port of its own: `http://127.0.0.1:<port>`, without /v1. */
  agentServicesUrl: string;
  /** A replica token for `agentId`, as a driver would hand one to a replica, valid from the harness clock's now. */
  mintAgentToken(agentId: string, replicaId?: string): string;
  database: string;
  /** Stops serving at once, leaving containers running, as a crash of the control API would. */
  crash(): Promise<void>;
  /** The real podman driver with `{ orchestrate: true }`, the Nomad driver with `{ nomad }`, otherwise an InMemoryDriver (test/support/in-memory-driver.ts). */
  driver: Orchestrator;
  clock: ManualClock;
  config: Config;
  db: Knex;
  redis: Redis;
  control: Control;
  request<T = any>(method: string, path: string, options?: RequestOptions): Promise<ApiResponse<T>>;
  /** Registers a new user (and account) and returns its session token and user. */
  signUp(overrides?: Partial<{ email: string; password: string; name: string; invite_code: string }>): Promise<{ token: string; user: any; password: string }>;
  close(): Promise<void>;
}

/**
 * The control API in-process on port 0, on a fresh database copied from the migrated
 * template, with a clock the test moves by hand.
 */
export interface ControlOptions {
  /** Run agents for real with podman (a driver of its own, on a podman instance label of its own). */
  orchestrate?: boolean;
  /** Start on the database (and podman instance) of an earlier control, as a restart would. */
  resume?: { database: string };
  /** A billing provider for POST /account/subscription (tests pass a fake: no real one exists). */
  billing?: BillingProvider;
  /** Run agents with the Nomad driver against this cluster (a fake one in tests: test/support/fake-nomad/). */
  nomad?: NomadCluster;
  /** Postgres (a server holding TEMPLATE_DATABASE) and Redis of the test's own, for a test that stops them. */
  services?: { templateDatabaseUrl: string; redisUrl: string };
  /** Where the control API's log lines go instead of stdout, at LOG_LEVEL: a test that reads what was logged. */
  logTo?: DestinationStream;
}

/** Where the Nomad driver finds Nomad and Consul. */
export interface NomadCluster {
  nomadAddr: string;
  consulAddr: string;
  nomadToken?: string;
  consulToken?: string;
}

/** The Nomad driver's settings for a test: the fast polling of the podman driver's tests, the same restart budget. */
const nomadEnvironment = (cluster: NomadCluster): Record<string, string> => ({
  ORCHESTRATOR: 'nomad',
  NOMAD_ADDR: cluster.nomadAddr,
  CONSUL_HTTP_ADDR: cluster.consulAddr,
  ...(cluster.nomadToken ? { NOMAD_TOKEN: cluster.nomadToken } : {}),
  ...(cluster.consulToken ? { CONSUL_HTTP_TOKEN: cluster.consulToken } : {}),
  NOMAD_WATCH_MIN_INTERVAL_MS: '20',
  RESTART_BUDGET: '2',
  DRAIN_SECONDS: '0.5',
  STOP_TIMEOUT_SECONDS: '2',
  RUNTIME_IMAGE: TEST_IMAGE,
});

/** Settings that make the podman driver react in test time; a test may override any. */
const FAST_ORCHESTRATION = {
  PODMAN_POLL_INTERVAL_MS: '250',
  START_GRACE_SECONDS: '4',
  RESTART_BUDGET: '2',
  RESTART_BACKOFF_BASE_MS: '200',
  RESTART_BACKOFF_MAX_MS: '500',
  STOP_TIMEOUT_SECONDS: '2',
  DRAIN_SECONDS: '0.5',
  // Suites that start real containers load both cores for seconds at a time, and the
  // shared Redis and Postgres with them: a reply can take over a second, which the
  // fail-fast defaults (1 s, 1.5 s; test/control-stalls.test.ts holds them) would turn into
  // 503s these suites are not about. A CI run saw one: a sign-up's CACHE_UNAVAILABLE.
  REDIS_COMMAND_TIMEOUT_MS: '5000',
  DATABASE_QUERY_TIMEOUT_MS: '5000',
};

export async function startControl(env: Record<string, string> = {}, options: ControlOptions = {}): Promise<TestControl> {
  const templateUrl = options.services?.templateDatabaseUrl ?? process.env.TEST_TEMPLATE_DATABASE_URL;
  const redisUrl = options.services?.redisUrl ?? process.env.TEST_REDIS_URL;
  if (!templateUrl || !redisUrl) throw new Error('Run tests with `npm test`: the global setup starts Postgres and Redis');

  const database = options.resume?.database ?? `t_${randomBytes(6).toString('hex')}`;
  if (!options.resume) {
    const admin = connectDatabase(templateUrl.replace(/\/[^/]+$/, '/postgres'), { min: 0, max: 1 });
    await admin.raw(`CREATE DATABASE ${database} TEMPLATE ${TEMPLATE_DATABASE}`);
    await admin.destroy();
  }
  const databaseUrl = templateUrl.replace(/\/[^/]+$/, `/${database}`);
  // Containers reach the agent services on the host's 0.0.0.0 (control/orchestrator/create.ts,
  // agentServicesAccess), at the port the driver gives them and lets through their firewall:
  // a fixed one, chosen here; on the fake Nomad, the test's, which its NOMAD_AGENT_SERVICES_URL
  // names. Without containers, 127.0.0.1 on any port.
  const reachable = options.orchestrate || (options.nomad && env.AGENT_SERVICES_PORT);
  // The port is bound here, before the config names it, and the services server takes this very
  // socket over once it exists (servicesServer.listen(servicesPort)). Chosen free and bound only after
  // the first reconcile, as it once was, a CI run lost it in between to a client socket's ephemeral
  // port (EADDRINUSE): the kernel gives out the same range.
  const servicesPort = await listenTcp(reachable ? '0.0.0.0' : '127.0.0.1', env.AGENT_SERVICES_PORT ? Number(env.AGENT_SERVICES_PORT) : 0);

  const config = loadConfig({
    // What podman reads from the environment (PATH, XDG_*, CONTAINERS_*, ...), as control/main.ts's
    // loadConfig(process.env) finds it: the driver hands podman only these.
    ...podmanEnvironmentOf(process.env),
    DATABASE_URL: databaseUrl,
    REDIS_URL: redisUrl,
    // Derived from the database, so a resumed control can read what the first one sealed.
    MASTER_KEY: createHash('sha256').update(database).digest('base64'),
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    // Every signUp comes from 127.0.0.1: a test of the limit sets its own.
    REGISTRATION_RATE_LIMIT_PER_HOUR: '1000000',
    SSO_START_RATE_LIMIT_PER_MINUTE: '1000000',
    // Redis keys of its own, named after the database so that a resumed control finds them again.
    REDIS_KEY_PREFIX: `${database}:`,
    // The domain worker never leaves the machine and gets its answer at once: nothing listens on
    // port 9 (discard), so a TXT lookup fails with ECONNREFUSED (the domain stays pending with that
    // reason) and so does a connection to the ACME directory. A test of the flow passes its own.
    DNS_RESOLVER: '127.0.0.1:9',
    ACME_DIRECTORY_URL: 'https://127.0.0.1:9/directory',
    ...(options.orchestrate ? { ...FAST_ORCHESTRATION, PODMAN_INSTANCE: `test-${database}`, RUNTIME_IMAGE: TEST_IMAGE, AGENT_SERVICES_PORT: String((servicesPort.address() as AddressInfo).port) } : {}),
    ...(options.nomad ? nomadEnvironment(options.nomad) : {}),
    ...env,
  });
  const clock = new ManualClock(new Date());
  const db = connectDatabase(databaseUrl, DEFAULT_POOL, config.databaseStatementTimeoutMs, config.databaseTimeouts);
  // An authz paired with this control reads the projection through this client, or one with config.redisKeyPrefix.
  const redis = connectRedis(redisUrl, config.redisKeyPrefix, config.redisCommandTimeoutMs);
  const logger = createLogger(config.logLevel, 'control', options.logTo);
  // Chosen as control/main.ts chooses it: podman, or Nomad when the config names it (nomadEnvironment).
  // The fake Nomad cluster runs allocations as podman containers too, of the same image.
  if (options.orchestrate || options.nomad) ensureTestImage(podmanRuntime(config.podman));
  // The driver lives in real time (backoff, grace periods); the manual clock is for tokens and windows.
  // Without containers to run, a driver that keeps the jobs it is handed and runs none.
  const started = options.orchestrate || options.nomad ? await createOrchestrator(config, systemClock, logger) : inMemoryDriver();
  const driver: Orchestrator = started.orchestrator;
  const passes: PassRecord[] = [];
  const control = buildControl({ config, db, redis, clock, logger, driver: started, billing: options.billing, onPass: (pass) => passes.push(pass) });
  // As at the start of the real control API: adopt what runs, start what is missing (the reconciler's
  // first pass). The loops' timers are left off: tests drive each pass they rely on.
  await control.loops.reconciler.runOnce();
  // The loop logs a failed pass and goes on; a test must not start on a platform that did not reconcile.
  if (passes.at(-1)?.outcome !== 'ran') throw new Error(`the first reconcile did not run (${passes.at(-1)?.outcome}); TEST_LOG_LEVEL=error shows why`);
  // As control/main.ts serves it: slow clients cut off, connections per address capped.
  const server: Server = createLimitedServer(config.clientLimits, control.app.callback());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  const servicesServer: Server = createLimitedServer(config.clientLimits, control.agentServices.callback());
  // A listening server handed to listen() gives its socket (Node's net.Server.listen(handle)): no moment in which the port is free.
  await new Promise<void>((resolve, reject) => servicesServer.once('error', reject).listen(servicesPort, resolve));
  const agentServicesUrl = `http://127.0.0.1:${(servicesServer.address() as AddressInfo).port}`;
  // Every answer a test gets is held to the document this control serves: an undocumented status, header or body fails that test.
  const checker = new OpenApiChecker((await (await fetch(`${baseUrl}/openapi.json`)).json()) as Record<string, any>);

  const request = async <T>(method: string, path: string, options: RequestOptions = {}): Promise<ApiResponse<T>> => {
    const headers: Record<string, string> = { ...options.headers };
    if (options.token) headers.authorization = `Bearer ${options.token}`;
    let body: string | undefined = options.rawBody;
    if (options.body !== undefined) {
      body = JSON.stringify(options.body);
      headers['content-type'] = 'application/json';
    }
    const response = await fetch(baseUrl + path, { method, headers, body });
    const text = await response.text();
    checker.check({ method, path, status: response.status, headers: response.headers, text });
    return { status: response.status, body: text ? JSON.parse(text) : undefined, headers: response.headers };
  };

  let counter = 0;
  const signUp: TestControl['signUp'] = async (overrides = {}) => {
    counter += 1;
    const password = overrides.password ?? 'correct horse battery';
    const response = await request<any>('POST', '/auth/register', {
      body: { email: `user${counter}-${randomBytes(3).toString('hex')}@example.com`, password, name: `User ${counter}`, ...overrides },
    });
    if (response.status !== 201) throw new Error(`sign-up failed: ${response.status} ${JSON.stringify(response.body)}`);
    return { token: response.body.token, user: response.body.user, password };
  };

  const stopServing = async () => {
    for (const open of [server, servicesServer]) {
      open.closeAllConnections();
      await new Promise((resolve) => open.close(resolve));
    }
    await db.destroy();
    redis.disconnect();
  };

  return {
    baseUrl,
    agentServicesUrl,
    mintAgentToken: (agentId, replicaId = 'replica-1') => control.services.agentTokens.mint(agentId, replicaId, clock.now()).token,
    database,
    crash: async () => {
      // Queued and in-flight orchestrator steps die with the process; the next start's reconcile redoes them.
      void control.services.runner.close();
      await driver.close();
      await stopServing();
    },
    clock,
    config,
    db,
    redis,
    control,
    request,
    signUp,
    driver,
    close: async () => {
      await control.loops.stop(); // a test that started the loops has them stopped as control/main.ts does
      await control.services.domainWorker.stop(); // a pass the API woke (a new domain) ends before the database goes
      await control.services.runner.close(); // no queued step starts a job after the cleanup
      await driver.reconcile([]); // removes this suite's containers and networks (or Nomad jobs)
      await driver.close();
      await stopServing();
      // With its containers gone, the instance's token directories are no one's (a crash keeps them for the resume).
      if (options.orchestrate) rmSync(stateDirectoryOf(config.podman), { recursive: true, force: true });
    },
  };
}

/** A TCP listener on host:port (0: any free one), to be taken over by the server that serves it. */
async function listenTcp(host: string, port: number): Promise<TcpServer> {
  const listener = createTcpServer();
  await new Promise<void>((resolve, reject) => listener.once('error', reject).listen(port, host, resolve));
  return listener;
}
