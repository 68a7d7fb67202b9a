import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, lstatSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { connectDatabase } from '../control/db/database.js';
import { freePort } from '../scripts/lib/local-services.js';
import { AuthorizationTestClient, denialOf } from './support/edge-authz.js';
import { processTree, tcpListenPorts } from './support/listeners.js';

/**
 * The platform image as Nomad runs it: built by scripts/build-platform-image.sh, then authz and
 * the control API started from it (compiled JavaScript, uid 1000, no capabilities) against the
 * run's real Redis and Postgres. The containers share the host's network namespace because the
 * test harness binds Postgres and Redis to 127.0.0.1 only, which a bridged container cannot reach.
 */

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const IMAGE = 'localhost/agent-platform:latest';

async function buildImage(): Promise<{ stdout: string; stderr: string }> {
  return run('bash', ['scripts/build-platform-image.sh'], { cwd: ROOT, env: { ...process.env, PLATFORM_IMAGE: IMAGE }, maxBuffer: 64 * 1024 * 1024 });
}

async function podman(args: string[]): Promise<string> {
  return (await run('podman', args, { maxBuffer: 16 * 1024 * 1024 })).stdout;
}

const PROJECT_NODE_VERSION = readFileSync(new URL('../.node-version', import.meta.url), 'utf8').trim();

describe('the platform image (Containerfile, scripts/build-platform-image.sh)', function () {
  // The first build compiles, installs production node_modules and may make the local base image.
  this.timeout(15 * 60_000);

  const prefix = `platform-image-test-${randomBytes(3).toString('hex')}`;
  const containers: string[] = [];
  let hostOptions: string[];

  /** Starts `command` from the image with the limits the Nomad jobs set; waits until `ready` answers. */
  async function startContainer(name: string, env: Record<string, string>, command: string[], readyUrl: string, runOptions: string[] = []): Promise<void> {
    const container = `${prefix}-${name}`;
    containers.push(container);
    await podman([
      'run', '-d', '--name', container, ...hostOptions, ...runOptions,
      '--network', 'host', '--cap-drop', 'all', '--security-opt', 'no-new-privileges', '--pids-limit', '512', '--memory', '512m',
      ...Object.entries(env).flatMap(([key, value]) => ['-e', `${key}=${value}`]),
      IMAGE, ...command,
    ]);
    const giveUpAt = Date.now() + 60_000;
    for (;;) {
      const state = (await podman(['inspect', '--format', '{{.State.Status}}', container])).trim();
      if (state !== 'running') throw new Error(`${name} stopped (${state}):\n${await logsOf(container)}`);
      try {
        if ((await fetch(readyUrl)).ok) return;
      } catch {
        // not listening yet
      }
      if (Date.now() > giveUpAt) throw new Error(`${name} did not answer ${readyUrl} within 60 s:\n${await logsOf(container)}`);
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }

  const logsOf = async (container: string) => {
    const { stdout, stderr } = await run('podman', ['logs', '--tail', '40', container]).catch((error) => error as { stdout: string; stderr: string });
    return `${stdout}${stderr}`;
  };

  before(async function () {
    await buildImage();
    const { stdout } = await run('bash', ['runtime-image/scripts/podman-run-flags.sh', IMAGE], { cwd: ROOT });
    hostOptions = stdout.trim().split(/\s+/).filter(Boolean);
  });

  after(async function () {
    for (const container of containers) await podman(['rm', '-f', '-t', '0', container]).catch(() => undefined);
  });

  it('is built once: a second run without changes finds the image up to date', async function () {
    const { stdout, stderr } = await buildImage();
    assert.equal(stdout.trim(), IMAGE);
    assert.match(stderr, /is up to date/);
  });

  it('is labelled as OCI images are (version, revision, base) and carries its CycloneDX bill of materials', async function () {
    const [image] = JSON.parse(await podman(['image', 'inspect', IMAGE])) as { Config: { Labels: Record<string, string> } }[];
    const labels = image!.Config.Labels;
    assert.equal(labels['org.opencontainers.image.version'], JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')).version);
    assert.match(labels['org.opencontainers.image.revision'] ?? '', /^[0-9a-f]{40}$|^unknown$/);
    assert.ok(labels['org.opencontainers.image.base.name'], 'the base it was built on');
    const sbom = JSON.parse(await podman(['run', '--rm', ...hostOptions, IMAGE, 'node', '-e', "process.stdout.write(require('node:fs').readFileSync('sbom.cdx.json', 'utf8'))"]));
    assert.equal(sbom.bomFormat, 'CycloneDX');
    const names = new Set((sbom.components as { name: string }[]).map((component) => component.name));
    for (const dependency of ['koa', 'knex', 'ioredis', '@grpc/grpc-js']) assert.ok(names.has(dependency.split('/').pop()!) || names.has(dependency), `${dependency} in the bill of materials`);
  });

  it('runs compiled JavaScript as uid 1000: no TypeScript sources, no tsx, control by default', async function () {
    const [config] = JSON.parse(await podman(['image', 'inspect', IMAGE])) as { Config: { User: string; Cmd: string[]; WorkingDir: string } }[];
    assert.equal(config!.Config.User, '1000:1000');
    assert.deepEqual(config!.Config.Cmd, ['node', 'dist/control/main.js']);
    const probe = `const fs = require('node:fs');
      let tsx = true; try { require.resolve('tsx'); } catch { tsx = false; }
      console.log(JSON.stringify({ uid: process.getuid(), tsx, top: fs.readdirSync('.').sort(), dist: fs.readdirSync('dist').sort(), node: process.versions.node }));`;
    const { node, ...seen } = JSON.parse(await podman(['run', '--rm', ...hostOptions, IMAGE, 'node', '-e', probe]));
    assert.equal(node.split('.')[0], PROJECT_NODE_VERSION.split('.')[0], `the image runs the project's Node LTS (.node-version ${PROJECT_NODE_VERSION}), got ${node}`);
    // dist/package.json: tsc's copy of the one control/config/runtime-image.ts imports for the version (the default RUNTIME_IMAGE tag).
    assert.deepEqual(seen, { uid: 1000, tsx: false, top: ['dist', 'envoy', 'node_modules', 'package-lock.json', 'package.json', 'sbom.cdx.json'], dist: ['authz', 'console', 'contract', 'control', 'envoy', 'package.json', 'proto'] });
  });

  it("holds envoy.yaml and tls-listener.yaml where authz's xDS settings default to, and authz builds the HTTPS listener of them", async function () {
    // authz/config.ts resolves AUTHZ_XDS_TLS_LISTENER_FILE and AUTHZ_XDS_ENVOY_CONFIG_FILE from the package root, /app.
    const probe = `const fs = require('node:fs');
      Promise.all([import('./dist/authz/config.js'), import('./dist/authz/xds/tls-listener.js')]).then(([config, xds]) => {
        const { xds: files } = config.loadAuthzConfig({ REDIS_URL: 'redis://127.0.0.1:6379', AUTHZ_GRPC_SOCKET: '/alloc/tmp/authz.sock', AUTHZ_XDS_SOCKET: '/alloc/tmp/authz-xds.sock' });
        const listener = xds.tlsListenerFor(xds.loadTlsListenerTemplate(files), ['shop.example.com']);
        console.log(JSON.stringify({ files, envoy: fs.readdirSync('envoy').sort(), tlsListener: fs.readFileSync(files.tlsListenerFile, 'utf8'), envoyConfig: fs.readFileSync(files.envoyConfigFile, 'utf8'), chains: listener.filter_chains.length }));
      });`;
    const seen = JSON.parse(await podman(['run', '--rm', ...hostOptions, IMAGE, 'node', '-e', probe]));
    assert.deepEqual(seen.files, { socketPath: '/alloc/tmp/authz-xds.sock', tlsListenerFile: '/app/envoy/tls-listener.yaml', envoyConfigFile: '/app/envoy/envoy.yaml' });
    assert.deepEqual(seen.envoy, ['envoy.yaml', 'tls-listener.yaml']);
    assert.equal(seen.tlsListener, readFileSync(new URL('../envoy/tls-listener.yaml', import.meta.url), 'utf8'));
    assert.equal(seen.envoyConfig, readFileSync(new URL('../envoy/envoy.yaml', import.meta.url), 'utf8'));
    assert.equal(seen.chains, 2, "the custom domain's chain and the agent domain's");
  });

  describe('authz from the image', function () {
    let socketDir: string;
    let metricsPort: number;
    let client: AuthorizationTestClient;

    before(async function () {
      // As in Nomad: the socket in a directory mounted into the container (the allocation's
      // tmp/, writable by every task's user), which a client of another user connects to.
      socketDir = mkdtempSync(join(tmpdir(), 'authz-image-'));
      chmodSync(socketDir, 0o777);
      metricsPort = await freePort();
      await startContainer('authz', {
        REDIS_URL: process.env.TEST_REDIS_URL!,
        REDIS_KEY_PREFIX: 'platform-image:',
        AUTHZ_HOST: '127.0.0.1',
        AUTHZ_GRPC_SOCKET: '/alloc/tmp/authz.sock',
        AUTHZ_METRICS_PORT: String(metricsPort),
        AGENT_DOMAIN: 'platform-image.test',
        // AUTHZ_WORKERS unset: as many workers as cores behind a primary (the Nomad job sets authz_workers). Ready means a worker serves.
      }, ['node', 'dist/authz/main.js'], `http://127.0.0.1:${metricsPort}/readyz`, ['-v', `${socketDir}:/alloc/tmp`]);
      client = new AuthorizationTestClient(`unix:${join(socketDir, 'authz.sock')}`);
    });
    after(() => {
      client?.close();
      if (socketDir) rmSync(socketDir, { recursive: true, force: true });
    });

    it('serves gRPC on the mounted socket, open to other users (mode 0666), and listens on TCP for nothing but metrics', async function () {
      const stats = lstatSync(join(socketDir, 'authz.sock'));
      assert.ok(stats.isSocket());
      assert.equal(stats.mode & 0o777, 0o666);
      assert.equal(stats.uid, 1000, "created by the image's user");
      const container = containers.find((name) => name.endsWith('-authz'))!;
      const pid = Number((await podman(['inspect', '--format', '{{.State.Pid}}', container])).trim());
      // The container shares the host's network namespace here, so /proc/net/tcp shows its listeners.
      assert.deepEqual(tcpListenPorts(processTree(pid)), [metricsPort]);
    });

    it('is ready while Redis answers, on /readyz (and /healthz) and in gRPC health', async function () {
      for (const path of ['/readyz', '/healthz']) {
        const response = await fetch(`http://127.0.0.1:${metricsPort}${path}`);
        assert.equal(response.status, 200, path);
        assert.deepEqual(await response.json(), { status: 'ok', dependencies: { redis: 'ok' } });
      }
      assert.deepEqual(await client.healthCheck('envoy.service.auth.v3.Authorization'), { status: 'SERVING' });
    });

    it('answers Envoy\'s Check with Envoy\'s protos loaded from node_modules: an unknown agent is a 404', async function () {
      const denial = denialOf(await client.check({ host: 'nobody-here.platform-image.test' }));
      assert.equal(denial.httpStatus, 'NotFound');
    });
  });

  describe('the control API from the image', function () {
    const database = `pimg_${randomBytes(4).toString('hex')}`;
    let adminUrl: string;
    let root: string;

    before(async function () {
      // An empty database, so the compiled migrations run from dist/ as on a first deploy.
      adminUrl = process.env.TEST_TEMPLATE_DATABASE_URL!.replace(/\/[^/]+$/, '/postgres');
      const admin = connectDatabase(adminUrl, { min: 0, max: 1 });
      await admin.raw(`CREATE DATABASE ${database}`);
      await admin.destroy();
      const port = await freePort();
      root = `http://127.0.0.1:${port}`;
      await startContainer('control', {
        DATABASE_URL: adminUrl.replace(/\/postgres$/, `/${database}`),
        REDIS_URL: process.env.TEST_REDIS_URL!,
        REDIS_KEY_PREFIX: `${database}:`,
        MASTER_KEY: randomBytes(32).toString('base64'),
        CONTROL_HOST: '127.0.0.1',
        // Every suite registers from 127.0.0.1 into the run's one Redis: the per-address limit would trip.
        REGISTRATION_RATE_LIMIT_PER_HOUR: '1000000',
        CONTROL_PORT: String(port),
        // Any free port: the default 7072 may be taken by another control API on this host.
        CONTROL_METRICS_PORT: '0',
        // Off: the default 7090 may be taken too, and nothing here calls agent services.
        AGENT_SERVICES_PORT: '0',
        LOG_LEVEL: 'warn',
      }, [], `${root}/livez`);
    });

    after(async function () {
      const container = containers.find((name) => name.endsWith('-control'));
      if (container) await podman(['rm', '-f', '-t', '0', container]).catch(() => undefined);
      const admin = connectDatabase(adminUrl, { min: 0, max: 1 });
      await admin.raw(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
      await admin.destroy();
    });

    it('migrated the empty database and reports live and ready', async function () {
      const db = connectDatabase(adminUrl.replace(/\/postgres$/, `/${database}`), { min: 0, max: 1 });
      try {
        const migrations = (await db('knex_migrations').select('name').orderBy('name')).map((row: { name: string }) => row.name);
        assert.deepEqual(migrations.slice(0, 3), ['001-initial', '002-deployments', '003-usage']);
      } finally {
        await db.destroy();
      }
      assert.deepEqual(await (await fetch(`${root}/livez`)).json(), { status: 'ok' });
      const ready = await fetch(`${root}/readyz`);
      assert.equal(ready.status, 200);
      assert.deepEqual(await ready.json(), { status: 'ok', dependencies: { postgres: 'ok', redis: 'ok' } });
    });

    it('serves the web console built into the image at /, with its Content-Security-Policy', async function () {
      const page = await fetch(`${root}/`);
      assert.equal(page.status, 200);
      assert.match(page.headers.get('content-security-policy')!, /default-src 'self'/);
      const script = /src="(\/assets\/main-[A-Z0-9]+\.js)"/.exec(await page.text())?.[1];
      assert.ok(script, 'index.html names its script');
      const asset = await fetch(root + script);
      assert.equal(asset.status, 200);
      assert.match(asset.headers.get('content-type')!, /^text\/javascript/);
    });

    it('registers a user (argon2, a native addon, loads in the image)', async function () {
      const response = await fetch(`${root}/v1/auth/register`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email: 'image@example.com', password: 'a long enough password', name: 'Image' }),
      });
      assert.equal(response.status, 201, await response.clone().text());
      const body = await response.json();
      assert.equal(body.user.email, 'image@example.com');
      assert.match(body.token, /\S{20,}/);
    });
  });
});
