import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, lstatSync, readFileSync } from 'node:fs';
import { credentials } from '@grpc/grpc-js';
import type { Redis } from 'ioredis';
import { loadAuthorizationService } from '../proto/load.js';
import { freePort } from '../scripts/lib/local-services.js';
import { connectTestRedis, EdgeProjectionWriter, envoyCheckRequest, tempAuthzSocket, uniqueAgentDomain } from './support/edge-authz.js';
import { waitFor } from './support/wait.js';
import { describeOnEachAuthzServer } from './support/authz-servers.js';

type CheckClient = {
  Check(request: unknown, options: object, callback: (error: Error | null, response?: { status: { code: number } }) => void): void;
  close(): void;
};

/**
 * authz as `node authz/main.ts` with AUTHZ_WORKERS=2: one gRPC Unix socket (as Envoy's
 * sidecar) served by two worker processes, one metrics port served by the primary for both.
 */
describeOnEachAuthzServer('authz with AUTHZ_WORKERS=2 (node:cluster)', function (server) {
  this.timeout(120_000);
  const domain = uniqueAgentDomain('authz-workers');
  const host = `shop.${domain}`;
  let redis: Redis;
  let projection: EdgeProjectionWriter;
  let authz: ChildProcess;
  let exited: Promise<[number | null, string | null]>;
  let socket: ReturnType<typeof tempAuthzSocket>;
  let grpcAddress: string;
  let metricsUrl: string;
  const clients: CheckClient[] = [];

  before(async () => {
    redis = connectTestRedis();
    projection = new EdgeProjectionWriter(redis);
    await projection.putAgent({ slug: 'shop', access: 'public', callerRpm: 1_000_000, agentRpm: 1_000_000, upstreams: ['10.1.0.1:8080'] });
    const metricsPort = await freePort();
    socket = tempAuthzSocket();
    grpcAddress = `unix:${socket.path}`;
    await leaveStaleSocket(socket.path);
    metricsUrl = `http://127.0.0.1:${metricsPort}/metrics`;
    authz = spawn(process.execPath, ['--import', 'tsx', 'authz/main.ts'], {
      env: {
        PATH: process.env.PATH,
        REDIS_URL: process.env.TEST_REDIS_URL,
        REDIS_KEY_PREFIX: redis.options.keyPrefix,
        AGENT_DOMAIN: domain,
        AUTHZ_GRPC_SOCKET: socket.path,
        AUTHZ_METRICS_PORT: String(metricsPort),
        AUTHZ_WORKERS: '2',
        AUTHZ_SERVER: server,
      },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    exited = once(authz, 'exit') as Promise<[number | null, string | null]>;
    await waitFor('both workers serving', async () => ((await checkCounts()).size === 2 ? true : undefined), 60_000);
  });

  after(async () => {
    for (const client of clients) client.close();
    if (authz.exitCode === null && authz.signalCode === null) authz.kill('SIGKILL');
    await projection.cleanUp();
    redis.disconnect();
    socket.remove();
  });

  /** agent_platform_authz_worker_checks_total by worker index, from the primary's aggregated /metrics. */
  async function checkCounts(): Promise<Map<number, number>> {
    const text = await (await fetch(metricsUrl)).text();
    return new Map([...text.matchAll(/^agent_platform_authz_worker_checks_total\{worker="(\d+)"\} (\d+)$/gm)].map((m) => [Number(m[1]), Number(m[2])]));
  }

  /** The pids of the primary's workers: its children (as Linux lists them) running authz/main.ts, as cluster.fork does. */
  function workerPids(): number[] {
    const children = readFileSync(`/proc/${authz.pid}/task/${authz.pid}/children`, 'utf8').trim();
    const runsAuthz = (pid: number) => {
      try {
        return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('authz/main.ts');
      } catch {
        return false; // exited meanwhile
      }
    };
    return children ? children.split(/\s+/).map(Number).filter(runsAuthz) : [];
  }

  /** A client on a connection of its own (no shared subchannel), so connections spread over the workers. */
  function newClient(): CheckClient {
    const { Client } = loadAuthorizationService();
    const client = new Client(grpcAddress, credentials.createInsecure(), { 'grpc.use_local_subchannel_pool': 1 }) as unknown as CheckClient;
    clients.push(client);
    return client;
  }

  const check = (client: CheckClient) =>
    new Promise<number>((resolve, reject) =>
      client.Check(envoyCheckRequest({ host }), { deadline: new Date(Date.now() + 10_000) }, (error, response) => (error ? reject(error) : resolve(response!.status.code))),
    );

  it('answers Checks on one socket from both workers, and the primary adds their metrics up', async () => {
    // The primary removed the stale socket before forking, and the workers share the one it bound.
    assert.ok(lstatSync(socket.path).isSocket());
    assert.equal(lstatSync(socket.path).mode & 0o777, 0o666, "Envoy's user may connect");
    const before = await checkCounts();
    const codes = await Promise.all(Array.from({ length: 4 }, () => newClient()).flatMap((client) => Array.from({ length: 10 }, () => check(client))));
    assert.deepEqual(new Set(codes), new Set([0]), 'every Check allowed');
    const after = await checkCounts();
    assert.equal(after.size, 2);
    assert.deepEqual([...after.keys()].sort(), [0, 1], 'one series per worker index');
    const served = [...after].map(([worker, count]) => count - (before.get(worker) ?? 0));
    // Four connections, dealt out in turn: each worker holds two of them.
    assert.ok(served.every((count) => count > 0), `Checks per worker: ${served.join(', ')}`);
    assert.equal(served.reduce((a, b) => a + b, 0), 40);
    const text = await (await fetch(metricsUrl)).text();
    assert.match(text, /^agent_platform_authz_checks_total\{decision="allowed",reason="allowed"\} 40$/m, 'the two workers\' counts, summed');
    assert.match(text, /^agent_platform_authz_ready 1$/m, 'the primary answers readiness once, not summed over the workers');
    assert.equal((await fetch(metricsUrl.replace('/metrics', '/readyz'))).status, 200, 'ready: Redis answers and workers serve');
  });

  it('replaces a worker that dies under the same index (no new series), and keeps answering', async () => {
    const [victim] = workerPids();
    assert.ok(victim, 'a worker to kill');
    process.kill(victim, 'SIGKILL');
    const pids = await waitFor('a new worker', async () => {
      const now = workerPids();
      return now.length === 2 && !now.includes(victim) && (await checkCounts()).size === 2 ? now : undefined;
    });
    assert.ok(!pids.includes(victim));
    assert.deepEqual([...(await checkCounts()).keys()].sort(), [0, 1], 'the replacement took the index of the worker it replaced');
    const client = newClient();
    assert.deepEqual(await Promise.all(Array.from({ length: 10 }, () => check(client))), Array(10).fill(0));
  });

  it('stops every worker on SIGTERM, then exits 0', async () => {
    const workers = workerPids();
    authz.kill('SIGTERM');
    const [code] = await exited;
    assert.equal(code, 0);
    for (const pid of workers) assert.throws(() => process.kill(pid, 0), /ESRCH/, `worker ${pid} still running`);
    await assert.rejects(check(newClient()), 'the gRPC socket is closed');
    assert.ok(!existsSync(socket.path), 'the socket file went with the last worker');
  });
});

/** What an authz killed by SIGKILL leaves behind: a socket file at `path` that nobody listens on. */
async function leaveStaleSocket(path: string): Promise<void> {
  const child = spawn(process.execPath, ['-e', `require('node:net').createServer().listen(${JSON.stringify(path)}, () => process.kill(process.pid, 'SIGKILL'))`]);
  await once(child, 'exit');
  assert.ok(lstatSync(path).isSocket(), 'a stale socket to start from');
}
