import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../scripts/lib/local-services.js';
import { containersOf, podmanStates } from './support/podman.js';
import { ensureTestImage, TEST_IMAGE } from './support/test-image.js';
import { waitFor } from './support/wait.js';
import { processTree, tcpListenPorts, unixListenPaths } from './support/listeners.js';

/**
 * The real `scripts/up.ts` (what `npm run up` runs once dependencies are installed), on
 * its own data dir and ports: the control API is killed with SIGKILL right after a create
 * that deploys two replicas, as in issue 13; the supervisor starts it again, and the
 * agent is there with both replicas, adopted (no container lost or doubled); then Ctrl-C
 * (SIGINT) stops everything it started, Postgres and Redis included, and up.ts exits,
 * leaving nothing in its TMPDIR: the podman driver's files are in its data dir (PODMAN_STATE_DIR).
 */
describe('npm run up: supervises, then stops fully', function () {
  this.timeout(240_000);
  let workDir: string;
  let up: ChildProcess | undefined;
  let output = '';
  let ports: Record<string, number>;
  /** up's TMPDIR, its own, so what its processes leave there can be listed. */
  let tmp: string;
  const instance = () => `up-test-${ports.control}`;

  const started = (name: string) => [...output.matchAll(new RegExp(`\\[up\\] started ${name} \\(pid (\\d+)\\)`, 'g'))].map((m) => Number(m[1]));
  /** Running, as the kernel sees it: a zombie (exited, not yet reaped by init) counts as stopped. */
  const isAlive = (pid: number) => {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
    } catch {
      return false;
    }
  };
  const isListening = (port: number) =>
    new Promise<boolean>((done) => {
      const socket = connect(port, '127.0.0.1');
      socket.once('connect', () => { socket.destroy(); done(true); });
      socket.once('error', () => done(false));
    });
  const api = async (method: string, path: string, body?: unknown, token?: string) => {
    const response = await fetch(`http://127.0.0.1:${ports.control}/v1${path}`, {
      method,
      headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    return { status: response.status, body: text ? JSON.parse(text) : null };
  };
  const postmasterPid = () => {
    const file = join(workDir, 'data', 'postgres', 'postmaster.pid');
    return existsSync(file) ? Number(readFileSync(file, 'utf8').split('\n')[0]) : undefined;
  };

  before(async () => {
    ensureTestImage('runc');
    workDir = mkdtempSync(join(tmpdir(), 'platform-up-'));
    chmodSync(workDir, 0o755); // Postgres runs as the postgres user when we are root
    tmp = join(workDir, 'tmp');
    mkdirSync(tmp);
    chmodSync(tmp, 0o1777); // as /tmp: every user's, each file its owner's
    ports = {};
    for (const name of ['postgres', 'redis', 'control', 'controlMetrics', 'agentServices', 'metrics', 'edge', 'edgeHttps']) ports[name] = await freePort();
    up = spawn(process.execPath, ['--import', 'tsx', 'scripts/up.ts'], {
      env: {
        ...process.env,
        PLATFORM_DATA_DIR: join(workDir, 'data'),
        UP_POSTGRES_PORT: String(ports.postgres),
        UP_REDIS_PORT: String(ports.redis),
        CONTROL_PORT: String(ports.control),
        CONTROL_METRICS_PORT: String(ports.controlMetrics),
        AGENT_SERVICES_PORT: String(ports.agentServices),
        AUTHZ_METRICS_PORT: String(ports.metrics),
        EDGE_PORT: String(ports.edge),
        EDGE_HTTPS_PORT: String(ports.edgeHttps),
        PODMAN_INSTANCE: instance(),
        TMPDIR: tmp,
        RUNTIME_IMAGE: TEST_IMAGE,
        LOG_LEVEL: 'warn',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    up.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    up.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    await waitFor('"Platform is up"', async () => (output.includes('Platform is up') ? true : undefined), 180_000);
  });

  after(async () => {
    // Only if the test failed half-way: nothing of this run may outlive it.
    if (up && up.exitCode === null && up.signalCode === null) {
      up.kill('SIGINT');
      await new Promise((resolve) => up!.once('exit', resolve));
    }
    // The instance's directory, in tmp, goes with it: its agent was deleted.
    if (workDir) rmSync(workDir, { recursive: true, force: true });
  });

  it('restarts the control API after a SIGKILL right after a create that deploys, and adopts the agent with both replicas', async () => {
    const registered = await api('POST', '/auth/register', { email: 'up@example.com', password: 'a long password', name: 'Up' });
    assert.equal(registered.status, 201, JSON.stringify(registered.body));
    const token = registered.body.token as string;
    const created = await api('POST', '/agents', { name: 'made before the kill', access: 'public', deploy: { replicas: 2, port: 8080 } }, token);
    assert.equal(created.status, 201, JSON.stringify(created.body));
    assert.match(created.body.url, new RegExp(`^https://[a-z0-9-]+\\.agents\\.localhost:${ports.edgeHttps}$`), 'the edge has HTTPS: agent URLs say so');

    // As if this control API were killed during a replica's start: the env file podman is given
    // holds the agent's secrets, opened. The next start of the driver removes it.
    const killedCall = join(workDir, 'data', 'podman', 'secrets', 'call-killed');
    mkdirSync(killedCall, { recursive: true });
    writeFileSync(join(killedCall, 'env'), 'API_KEY=an opened secret\n');
    const [first] = started('control');
    process.kill(first!, 'SIGKILL');
    await waitFor('a second control process', async () => (started('control').length === 2 ? true : undefined), 30_000);
    assert.match(output, /\[up\] control exited \(signal SIGKILL\); restarting in \d+ ms/);
    await waitFor('the control API to answer again', async () => ((await api('GET', '/agents', undefined, token)).status === 200 ? true : undefined), 60_000);
    assert.ok(!existsSync(killedCall), 'the restarted control API removed the files a killed one left with secrets in them');
    const listed = await api('GET', '/agents', undefined, token);
    assert.deepEqual(listed.body.agents.map((a: { id: string }) => a.id), [created.body.id]);
    let lastRead: unknown;
    const agent = await waitFor('both replicas running', async () => {
      const read = (await api('GET', `/agents/${created.body.id}`, undefined, token)).body;
      lastRead = read;
      return read.status === 'running' && read.replicas === 2 ? read : undefined;
    }, 120_000).catch((error: Error) => {
      // What was seen, so a failure says which side stopped short: the row, the containers, the log.
      const seen = podmanStates(created.body.id);
      throw new Error(`${error.message}\nlast read: ${JSON.stringify(lastRead)}\ncontainers: ${seen}\nup's output (tail):\n${output.slice(-4000)}`);
    });
    assert.equal(agent.error, null);
    const containers = containersOf(created.body.id);
    assert.equal(containers.length, 2, `exactly the two replicas, none lost or doubled: ${containers.join(', ')}`);
    // Leave nothing behind: the agent's containers and network go with it.
    assert.equal((await api('DELETE', `/agents/${created.body.id}`, undefined, token)).status, 204);
    await waitFor('the containers to go', async () => (containersOf(created.body.id).length === 0 ? true : undefined), 60_000);
  });

  it('serves the control API\'s metrics on CONTROL_METRICS_PORT, counting the traffic above by route template', async () => {
    const response = await fetch(`http://127.0.0.1:${ports.controlMetrics}/metrics`);
    assert.equal(response.status, 200);
    const text = await response.text();
    // The restarted control API counted the agent reads and the delete since its start.
    assert.match(text, /^agent_platform_control_http_requests_total\{method="GET",route="\/v1\/agents\/:id",code="200"\} [1-9]/m);
    assert.match(text, /^agent_platform_control_orchestrator_call_duration_seconds_count\{driver="podman",operation="reconcile"\} [1-9]/m);
    assert.match(text, /^process_cpu_user_seconds_total [0-9.e-]+$/m);
  });

  it("runs authz with gRPC on a socket in the data dir and no TCP listener but its metrics port", async () => {
    const [authz] = started('authz');
    const pids = processTree(authz!);
    assert.deepEqual(tcpListenPorts(pids), [ports.metrics], 'authz listens on TCP for metrics alone');
    const socket = join(workDir, 'data', 'authz.sock');
    assert.deepEqual(unixListenPaths(pids), [socket]);
    assert.match(output, new RegExp(`authz +gRPC on unix:${socket.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}, for the edge only`));
    // The edge reaches authz there: an unknown hostname is authz's own 404.
    const status = await new Promise<number>((resolve, reject) => {
      httpRequest({ host: '127.0.0.1', port: ports.edge, path: '/', headers: { host: 'nobody.agents.localhost' } }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      }).on('error', reject).end();
    });
    assert.equal(status, 404);
    // And over TLS on EDGE_HTTPS_PORT, the chain verified against the local CA up.ts made in the data dir.
    const tlsStatus = await new Promise<number>((resolve, reject) => {
      const ca = readFileSync(join(workDir, 'data', 'tls', 'ca.crt'));
      httpsRequest({ host: '127.0.0.1', port: ports.edgeHttps, path: '/', servername: 'nobody.agents.localhost', ca, headers: { host: 'nobody.agents.localhost' } }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      }).on('error', reject).end();
    });
    assert.equal(tlsStatus, 404);
    assert.match(output, /HTTPS uses a local CA .*To trust it:\n +curl: +curl --cacert /);
  });

  it('stops every process it started on Ctrl-C, Postgres and Redis included, and exits 0', async () => {
    const pids = ['redis', 'control', 'authz', 'edge'].flatMap(started);
    const postgres = postmasterPid();
    assert.ok(postgres && isAlive(postgres), 'Postgres runs');
    assert.ok(await isListening(ports.redis!), 'Redis listens');

    const exited = new Promise<number | null>((resolve) => up!.once('exit', (code) => resolve(code)));
    up!.kill('SIGINT');
    assert.equal(await exited, 0, output.slice(-2000));
    assert.deepEqual(pids.filter(isAlive), [], 'no child of up.ts still runs');
    assert.ok(!isAlive(postgres!), 'Postgres stopped');
    for (const name of ['postgres', 'redis', 'control', 'metrics', 'edge', 'edgeHttps']) assert.ok(!(await isListening(ports[name]!)), `nothing listens on the ${name} port`);
    assert.ok(!existsSync(join(workDir, 'data', 'authz.sock')), "authz's socket went with it");
    // The control API killed above left its files where the next run found them: in the
    // driver's directory in the data dir (PODMAN_STATE_DIR), which outlives runs on purpose,
    // since running containers keep their token directories mounted from it. Nothing of a run
    // is in TMPDIR (a temporary directory per run, as there once was); tsx keeps its compile
    // cache there, tsx-<uid>, by design. The agent was deleted, so its token directories went,
    // and with them, the secrets' directory emptied, the driver's directory at its stop.
    assert.deepEqual(readdirSync(tmp).filter((name) => !/^tsx-\d+$/.test(name)), []);
    assert.ok(!existsSync(join(workDir, 'data', 'podman')), `left: ${existsSync(join(workDir, 'data', 'podman')) ? readdirSync(join(workDir, 'data', 'podman'), { recursive: true }).join(', ') : ''}`);
  });
});
