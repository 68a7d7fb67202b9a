import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { connectDatabase } from '../control/db/database.js';
import { authFileContent } from '../control/orchestrator/podman/registry-auth-file.js';
import { stateDirectoryOf } from '../control/orchestrator/podman/host.js';
import { podmanEnvironmentOf } from '../control/orchestrator/podman/child-environment.js';
import { freePort } from '../scripts/lib/local-services.js';
import { startControl, type TestControl } from './support/control-harness.js';
import { TEMPLATE_DATABASE } from './support/global.js';
import { startLocalEdgeStack, type LocalEdgeStack } from './support/local-edge-stack.js';
import { podman } from './support/podman.js';
import { startRegistry, type TestRegistry } from './support/registry.js';
import { ensureTestImage, TEST_IMAGE } from './support/test-image.js';
import { waitFor } from './support/wait.js';

/**
 * Issue 32's "real registry in the tests": Debian's docker-registry on loopback with
 * htpasswd and TLS from the suite's own CA (test/support/registry.ts), the test image pushed
 * to it with podman, and agents deployed from it through the podman driver:
 *
 * - with the right credentials the agent runs and answers through the edge, and a deploy of
 *   the same image by digest runs too;
 * - with a wrong one, in a control API process of its own (its logs read whole, MASTER_KEYS
 *   in its environment), the deployment ends `failed` with the registry's reason, and the
 *   password is in no response, log line, audit row, deployments row, nor in any podman
 *   process's arguments or environment (a wrapper records both), which holds none of the
 *   control API's secrets either; an agent without credentials does not get the private
 *   image this host already holds either.
 */
describe('agents from a private registry (docker-registry on loopback, podman)', function () {
  this.timeout(300_000);
  let registry: TestRegistry;
  let dir: string;
  /** What every podman the control APIs started was given: `ARGS …` and `ENV …` lines. */
  let podmanLog: string;
  let wrapper: string;
  let image: string;
  let digest: string;

  before(async () => {
    registry = await startRegistry();
    dir = mkdtempSync(join(tmpdir(), 'registry-podman-'));
    podmanLog = join(dir, 'podman.log');
    wrapper = join(dir, 'podman');
    writeFileSync(wrapper, `#!/bin/sh\n{ printf 'ARGS'; for a in "$@"; do printf ' %s' "$a"; done; printf '\\n'; env | sed 's/^/ENV /'; } >> ${podmanLog}\nexec podman "$@"\n`);
    chmodSync(wrapper, 0o755);
    writeFileSync(podmanLog, '');
    // The test image, pushed under a name of the registry's, then untagged here: a deploy must pull it.
    ensureTestImage('runc');
    image = `${registry.host}/agents/echo:1`;
    const authFile = join(dir, 'push-auth.json');
    writeFileSync(authFile, authFileContent({ registry: registry.host, username: registry.username, password: registry.password }), { mode: 0o600 });
    podman(['tag', TEST_IMAGE, image]);
    podman(['push', '--quiet', '--authfile', authFile, '--cert-dir', registry.certDir, '--digestfile', join(dir, 'digest'), image]);
    digest = readFileSync(join(dir, 'digest'), 'utf8').trim();
    podman(['untag', TEST_IMAGE, image]);
    assert.match(digest, /^sha256:[a-f0-9]{64}$/);
  });
  after(async () => {
    for (const reference of [image, `${registry?.host}/agents/echo@${digest}`]) {
      try {
        podman(['rmi', '--force', reference]);
      } catch {
        // not pulled, or already gone
      }
    }
    await registry?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const podmanLines = () => readFileSync(podmanLog, 'utf8');

  describe('with the right credentials', () => {
    let control: TestControl;
    let edge: LocalEdgeStack;
    before(async () => {
      control = await startControl({ PODMAN_BINARY: wrapper, PODMAN_REGISTRY_CERTS_DIR: registry.certDir }, { orchestrate: true });
      edge = await startLocalEdgeStack(control);
    });
    after(async () => {
      await edge?.close();
      await control?.close();
    });

    function call(host: string, path: string, headers: Record<string, string>): Promise<{ status: number; body: string }> {
      return new Promise((done, fail) => {
        const req = httpRequest({ host: '127.0.0.1', port: edge.port, path, headers: { host, ...headers }, agent: false }, (res) => {
          let body = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => (body += chunk));
          res.on('end', () => done({ status: res.statusCode ?? 0, body }));
        });
        req.on('error', fail);
        req.end();
      });
    }

    it('pulls the image with them, runs the agent, which answers through the edge, and runs the same image deployed by digest', async () => {
      const { token } = await control.signUp();
      const created = await control.request('POST', '/agents', {
        token,
        body: { name: 'private image', deploy: { image, replicas: 1, registry_auth: { username: registry.username, password: registry.password } } },
      });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      const agent = created.body;
      const host = new URL(agent.url).hostname;
      const key = { authorization: `Bearer ${agent.access_key}` };
      const answer = await waitFor('the agent to answer through the edge', async () => {
        const shown = (await control.request('GET', `/agents/${agent.id}`, { token })).body;
        if (shown.status === 'failed') throw new Error(`failed: ${shown.error}`);
        const response = await call(host, '/health', key);
        return response.status === 200 ? response : undefined;
      }, 120_000, 500);
      assert.equal(answer.body, 'ok\n');
      assert.equal((await control.request('GET', `/agents/${agent.id}`, { token })).body.status, 'running');

      // The same image by digest: the registry_auth stays (same registry), the pull is by digest.
      const byDigest = `${registry.host}/agents/echo@${digest}`;
      const redeployed = await control.request('POST', `/agents/${agent.id}/deploy`, { token, body: { image: byDigest } });
      assert.equal(redeployed.status, 202, JSON.stringify(redeployed.body));
      await waitFor('the deployment by digest to succeed', async () => {
        const [newest] = (await control.request('GET', `/agents/${agent.id}/deployments?page_size=1`, { token })).body.deployments;
        if (newest.status === 'failed') throw new Error(`failed: ${newest.error}`);
        return newest.status === 'succeeded' ? newest : undefined;
      }, 120_000, 500);
      assert.equal((await call(host, '/health', key)).status, 200);
      const replica = (await control.driver!.status(agent.id))!.replicas.find((r) => r.state === 'running')!;
      assert.equal(JSON.parse(podman(['container', 'inspect', replica.id]))[0].ImageName, byDigest);

      const pulls = podmanLines().split('\n').filter((line) => line.startsWith('ARGS') && line.includes(' pull '));
      assert.equal(pulls.length, 2, pulls.join('\n'));
      for (const pull of pulls) assert.match(pull, new RegExp(`^ARGS .*pull --quiet --cert-dir ${registry.certDir} --authfile ${stateDirectoryOf(control.config.podman)}/secrets/call-[^/]+/auth\\.json ${registry.host}/agents/echo`));
      assert.ok(!podmanLines().includes(registry.password), "no podman process had the password in its arguments or environment");
    });
  });

  describe('with a wrong password (a control API process of its own)', () => {
    let child: ChildProcess;
    let output = '';
    let base = '';
    let databaseUrl = '';
    /** PODMAN_INSTANCE, whose directory the control API leaves (control/orchestrator/podman/settings.ts). */
    let instance = '';
    const masterKeys = `${randomBytes(32).toString('base64')},${randomBytes(32).toString('base64')}`;

    before(async () => {
      const templateUrl = process.env.TEST_TEMPLATE_DATABASE_URL!;
      const database = `t_${randomBytes(6).toString('hex')}`;
      const admin = connectDatabase(templateUrl.replace(/\/[^/]+$/, '/postgres'), { min: 0, max: 1 });
      await admin.raw(`CREATE DATABASE ${database} TEMPLATE ${TEMPLATE_DATABASE}`);
      await admin.destroy();
      databaseUrl = templateUrl.replace(/\/[^/]+$/, `/${database}`);
      instance = `test-${database}`;
      const port = await freePort();
      base = `http://127.0.0.1:${port}/v1`;
      child = spawn(process.execPath, ['--import', 'tsx', resolve(import.meta.dirname, '../control/main.ts')], {
        env: {
          ...process.env,
          DATABASE_URL: databaseUrl,
          REDIS_URL: process.env.TEST_REDIS_URL,
          REDIS_KEY_PREFIX: `${database}:`,
          MASTER_KEYS: masterKeys,
          REGISTRATION_RATE_LIMIT_PER_HOUR: '1000000',
          CONTROL_PORT: String(port),
          CONTROL_METRICS_PORT: '0',
          // Off: the default 7090 may be taken by another control API on this host.
          AGENT_SERVICES_PORT: '0',
          PODMAN_INSTANCE: instance,
          PODMAN_BINARY: wrapper,
          PODMAN_REGISTRY_CERTS_DIR: registry.certDir,
          PODMAN_POLL_INTERVAL_MS: '250',
          LOG_LEVEL: 'debug',
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
      child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
      await waitFor('the control API', async () => ((await fetch(`${base.replace(/\/v1$/, '')}/healthz`)).ok ? true : undefined), 60_000);
    });
    after(async () => {
      child?.kill('SIGTERM');
      if (child && child.exitCode === null) await new Promise((done) => child.once('exit', done));
      if (instance) rmSync(stateDirectoryOf({ instance, stateDirectory: null, environment: podmanEnvironmentOf(process.env) }), { recursive: true, force: true });
    });

    it('ends the deployment failed with the registry\'s reason, and the password is nowhere', async () => {
      const wrong = `wrong-${randomBytes(9).toString('base64url')}`;
      const bodies: string[] = [];
      const call = async (method: string, path: string, body?: unknown, token?: string) => {
        const response = await fetch(base + path, {
          method,
          headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...(token ? { authorization: `Bearer ${token}` } : {}) },
          body: body === undefined ? undefined : JSON.stringify(body),
        });
        const text = await response.text();
        bodies.push(text);
        return { status: response.status, body: text ? JSON.parse(text) : undefined };
      };
      const registered = await call('POST', '/auth/register', { email: `reg-${randomBytes(3).toString('hex')}@example.com`, password: 'correct horse battery', name: 'Registry' });
      assert.equal(registered.status, 201, JSON.stringify(registered.body));
      const token = registered.body.token;
      // The first suite's agent pulled it: the image is on this host, and still the registry decides.
      assert.doesNotThrow(() => podman(['image', 'exists', image]), 'the image is on this host');
      const created = await call('POST', '/agents', { name: 'wrong credentials', deploy: { image, replicas: 1, registry_auth: { username: registry.username, password: wrong } } }, token);
      assert.equal(created.status, 201, JSON.stringify(created.body));
      const id = created.body.id;
      const failed = await waitFor('the agent to fail', async () => {
        const shown = await call('GET', `/agents/${id}`, undefined, token);
        return shown.body.status === 'failed' ? shown.body : undefined;
      }, 120_000, 500);
      assert.match(failed.error, new RegExp(`image ${image.replace(/[.]/g, '\\.')} could not be pulled: .*unauthorized: authentication required`));
      const deployment = await waitFor('the deployment to end', async () => {
        const [newest] = (await call('GET', `/agents/${id}/deployments?page_size=1`, undefined, token)).body.deployments;
        return newest.status === 'in_progress' ? undefined : newest;
      }, 60_000, 500);
      assert.equal(deployment.status, 'failed');
      assert.match(deployment.error, /unauthorized: authentication required/);

      // Nor does an agent without credentials (another account's, say) get the private image this host holds.
      const anonymous = await call('POST', '/agents', { name: 'no credentials', deploy: { image, replicas: 1 } }, token);
      assert.equal(anonymous.status, 201, JSON.stringify(anonymous.body));
      const refused = await waitFor('the agent without credentials to fail', async () => {
        const shown = await call('GET', `/agents/${anonymous.body.id}`, undefined, token);
        return shown.body.status === 'failed' ? shown.body : undefined;
      }, 120_000, 500);
      assert.match(refused.error, /unauthorized: authentication required/);

      await new Promise((done) => setTimeout(done, 300)); // the last log lines reach the pipe
      const db = connectDatabase(databaseUrl, { min: 0, max: 1 });
      try {
        const places: [string, string][] = [
          ['a response', bodies.join('\n')],
          ['the control API log', output],
          ['an audit row', JSON.stringify(await db('audit_events').select())],
          ['a deployments row', JSON.stringify(await db('deployments').select())],
          ['a deployment event', JSON.stringify(await db('deployment_events').select())],
          ['an agents row', JSON.stringify(await db('agents').select())],
          ["a podman process's arguments or environment", podmanLines()],
        ];
        for (const [place, text] of places) assert.ok(!text.includes(wrong), `the password appears in ${place}`);
        assert.match(output, /"msg":"request"/, 'the log was captured');
      } finally {
        await db.destroy();
      }
      // podman was run by this process too, and got none of its secrets or settings.
      const environments = podmanLines().split('\n').filter((line) => line.startsWith('ENV '));
      assert.ok(environments.some((line) => line.startsWith('ENV PATH=')), 'podman gets PATH');
      for (const name of ['MASTER_KEYS', 'DATABASE_URL', 'REDIS_URL', 'TEST_TEMPLATE_DATABASE_URL', 'PODMAN_REGISTRY_CERTS_DIR']) {
        assert.ok(!environments.some((line) => line.startsWith(`ENV ${name}=`)), `podman was given ${name}`);
      }
      assert.ok(!podmanLines().includes(masterKeys.split(',')[0]!), 'no master key reached podman');
    });
  });
});
