import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, lstatSync, readFileSync, writeFileSync } from 'node:fs';
import type { Redis } from 'ioredis';
import { parse as parseYaml } from 'yaml';
import { AuthzConfigError, loadAuthzConfig } from '../authz/config.js';
import { GRPC_SERVERS } from '../authz/server.js';
import { healthServiceDefinition, healthService } from '../authz/health.js';
import { loadEnvoyRoot } from '../proto/load.js';
import { freePort } from '../scripts/lib/local-services.js';
import { envoyBootstrapFor, upAuthzWiring } from '../scripts/lib/up-authz.js';
import { AuthorizationTestClient, connectTestRedis, tempAuthzSocket, uniqueAgentDomain } from './support/edge-authz.js';
import { EnvoySchema } from './support/envoy-schema.js';
import { describeOnEachAuthzServer } from './support/authz-servers.js';
import { processTree, tcpListenPorts, unixListenPaths } from './support/listeners.js';
import { waitFor } from './support/wait.js';

/**
 * authz's gRPC server off the network (issue 30): it serves Envoy, its sidecar's one
 * client, on a Unix socket, and opens a TCP port for gRPC only when told to
 * (AUTHZ_GRPC_LISTEN). Metrics and probes stay on TCP.
 */

const BASE = { REDIS_URL: 'redis://127.0.0.1:6379' };

describe('authz gRPC listener settings', function () {
  const problemsOf = (env: Record<string, string>) => {
    try {
      loadAuthzConfig({ ...BASE, ...env });
    } catch (error) {
      assert.ok(error instanceof AuthzConfigError);
      return error.problems.join('\n');
    }
    return '';
  };

  it('takes a Unix socket (AUTHZ_GRPC_SOCKET) or a TCP host:port (AUTHZ_GRPC_LISTEN), metrics on AUTHZ_HOST either way', function () {
    const socket = loadAuthzConfig({ ...BASE, AUTHZ_GRPC_SOCKET: '/alloc/tmp/authz.sock' });
    assert.deepEqual(socket.grpcListen, { path: '/alloc/tmp/authz.sock' });
    assert.deepEqual([socket.host, socket.metricsPort], ['127.0.0.1', 7092]);
    assert.deepEqual(loadAuthzConfig({ ...BASE, AUTHZ_GRPC_LISTEN: '10.0.0.5:7091' }).grpcListen, { host: '10.0.0.5', port: 7091 });
    assert.deepEqual(loadAuthzConfig({ ...BASE, AUTHZ_GRPC_LISTEN: '[::1]:0' }).grpcListen, { host: '::1', port: 0 });
  });

  it('has no default: without either it names both, and why', function () {
    const problems = problemsOf({});
    assert.match(problems, /AUTHZ_GRPC_SOCKET or AUTHZ_GRPC_LISTEN: required, one of them/);
    assert.match(problems, /mTLS .* or a network policy/);
  });

  it('refuses both at once, a relative or too long path, a listen address that is no host:port, and the retired AUTHZ_GRPC_PORT', function () {
    assert.match(problemsOf({ AUTHZ_GRPC_SOCKET: '/run/authz.sock', AUTHZ_GRPC_LISTEN: '127.0.0.1:7091' }), /set one, not both/);
    assert.match(problemsOf({ AUTHZ_GRPC_SOCKET: 'authz.sock' }), /AUTHZ_GRPC_SOCKET: expected an absolute path/);
    assert.match(problemsOf({ AUTHZ_GRPC_SOCKET: `/${'a'.repeat(107)}` }), /AUTHZ_GRPC_SOCKET: a Unix socket's path holds at most 107 bytes/);
    for (const listen of ['7091', 'unix:/run/authz.sock', '127.0.0.1:65536', 'host name:1']) {
      assert.match(problemsOf({ AUTHZ_GRPC_LISTEN: listen }), /AUTHZ_GRPC_LISTEN: expected host:port/, listen);
    }
    assert.match(problemsOf({ AUTHZ_GRPC_SOCKET: '/run/authz.sock', AUTHZ_GRPC_PORT: '7091' }), /AUTHZ_GRPC_PORT: no longer read/);
  });
});

describeOnEachAuthzServer("authz's gRPC server on a Unix socket", function (kind) {
  let socket: ReturnType<typeof tempAuthzSocket>;
  beforeEach(() => {
    socket = tempAuthzSocket();
  });
  afterEach(() => socket.remove());

  async function serve() {
    const server = GRPC_SERVERS[kind]();
    server.addService(healthServiceDefinition, healthService([], async () => true));
    const bound = await server.listen({ path: socket.path });
    return { server, bound };
  }

  it('listens there, lets any user who reaches the directory connect (mode 0666), answers, and removes the file on shutdown', async function () {
    const { server, bound } = await serve();
    const client = new AuthorizationTestClient(`unix:${socket.path}`);
    try {
      assert.deepEqual(bound, { path: socket.path });
      const stats = lstatSync(socket.path);
      assert.ok(stats.isSocket());
      assert.equal(stats.mode & 0o777, 0o666);
      assert.deepEqual(await client.healthCheck(), { status: 'SERVING' });
    } finally {
      client.close();
      await server.shutdown(1_000);
    }
    assert.ok(!existsSync(socket.path), 'the socket file is gone');
  });

  it('replaces a stale socket (one an authz killed with SIGKILL left), but never a file that is no socket, nor a socket another process serves', async function () {
    const child = spawn(process.execPath, ['-e', `require('node:net').createServer().listen(${JSON.stringify(socket.path)}, () => process.kill(process.pid, 'SIGKILL'))`]);
    await once(child, 'exit');
    assert.ok(lstatSync(socket.path).isSocket(), 'a stale socket to start from');
    const { server } = await serve();
    const other = GRPC_SERVERS[kind]();
    try {
      await assert.rejects(other.listen({ path: socket.path }), /another process already serves/);
    } finally {
      other.forceShutdown();
      await server.shutdown(1_000);
    }

    writeFileSync(socket.path, 'not a socket');
    const third = GRPC_SERVERS[kind]();
    await assert.rejects(third.listen({ path: socket.path }), /exists and is not a socket/);
    third.forceShutdown();
    assert.equal(readFileSync(socket.path, 'utf8'), 'not a socket', 'left as it was');
  });
});

describe("npm run up's authz: gRPC on a socket in the data dir, no TCP listener for it", function () {
  this.timeout(60_000);
  const dataDir = '/srv/platform/.data';

  it('puts the socket in the data dir unless the operator chose a socket or a TCP listener', function () {
    assert.deepEqual(upAuthzWiring({}, dataDir), { env: { AUTHZ_GRPC_SOCKET: `${dataDir}/authz.sock` }, target: { path: `${dataDir}/authz.sock` } });
    assert.deepEqual(upAuthzWiring({ AUTHZ_GRPC_SOCKET: '/run/a.sock' }, dataDir).target, { path: '/run/a.sock' });
    assert.deepEqual(upAuthzWiring({ AUTHZ_GRPC_LISTEN: '127.0.0.1:7091' }, dataDir), { env: {}, target: { host: '127.0.0.1', port: 7091 } });
    assert.throws(() => upAuthzWiring({}, `/${'d'.repeat(100)}`), /PLATFORM_DATA_DIR/);
  });

  it("gives an installed Envoy envoy.yaml with only cluster authz's address changed, a bootstrap Envoy accepts", function () {
    const yaml = readFileSync(new URL('../envoy/envoy.yaml', import.meta.url), 'utf8');
    const original = parseYaml(yaml);
    for (const target of [{ path: `${dataDir}/authz.sock` }, { host: '127.0.0.1', port: 7091 }]) {
      const rendered = parseYaml(envoyBootstrapFor(yaml, target));
      const address = rendered.static_resources.clusters.find((c: { name: string }) => c.name === 'authz').load_assignment.endpoints[0].lb_endpoints[0].endpoint.address;
      assert.deepEqual(address, 'path' in target ? { pipe: target } : { socket_address: { address: target.host, port_value: target.port } });
      const expected = structuredClone(original);
      expected.static_resources.clusters.find((c: { name: string }) => c.name === 'authz').load_assignment.endpoints[0].lb_endpoints[0].endpoint.address = address;
      assert.deepEqual(rendered, expected);
      assert.deepEqual(new EnvoySchema(loadEnvoyRoot()).check('envoy.config.bootstrap.v3.Bootstrap', rendered), []);
    }
  });

  describe('authz/main.ts started as up.ts starts it', function () {
    let socket: ReturnType<typeof tempAuthzSocket>;
    let authz: ChildProcess;
    let metricsPort: number;
    let redis: Redis;

    before(async function () {
      redis = connectTestRedis();
      socket = tempAuthzSocket();
      metricsPort = await freePort();
      const dir = socket.path.slice(0, socket.path.lastIndexOf('/'));
      const wiring = upAuthzWiring({}, dir);
      assert.equal(wiring.env.AUTHZ_GRPC_SOCKET, socket.path);
      // up.ts's settings for authz: REDIS_URL, the metrics port and the wiring. Two workers (the
      // default on a two-core host), so the cluster's primary and its workers are looked at too.
      authz = spawn(process.execPath, ['--import', 'tsx', 'authz/main.ts'], {
        env: { PATH: process.env.PATH, REDIS_URL: process.env.TEST_REDIS_URL, REDIS_KEY_PREFIX: redis.options.keyPrefix, AGENT_DOMAIN: uniqueAgentDomain('up-authz'), AUTHZ_METRICS_PORT: String(metricsPort), AUTHZ_WORKERS: '2', ...wiring.env },
        stdio: ['ignore', 'ignore', 'inherit'],
      });
      await waitFor('authz ready', async () => ((await fetch(`http://127.0.0.1:${metricsPort}/readyz`).catch(() => undefined))?.status === 200 ? true : undefined), 30_000);
    });

    after(async function () {
      if (authz && authz.exitCode === null && authz.signalCode === null) {
        authz.kill('SIGTERM');
        await once(authz, 'exit');
      }
      redis?.disconnect();
      socket?.remove();
    });

    it('listens on TCP for its metrics port alone, and serves gRPC on the socket', async function () {
      const pids = processTree(authz.pid!);
      assert.ok(pids.length >= 3, `the primary and its two workers: ${pids.join(', ')}`);
      assert.deepEqual(tcpListenPorts(pids), [metricsPort], 'no TCP listener but the metrics port');
      assert.deepEqual(unixListenPaths(pids), [socket.path]);
      const client = new AuthorizationTestClient(`unix:${socket.path}`);
      try {
        assert.deepEqual(await client.healthCheck(), { status: 'SERVING' });
      } finally {
        client.close();
      }
    });
  });
});
