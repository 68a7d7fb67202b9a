import { strict as assert } from 'node:assert';
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startControl, type TestControl } from './support/control-harness.js';
import { assertIsolated, assertNothingPublished } from './support/isolation-effect.js';
import { createRunningAgent, podman, waitFor } from './support/orch-helpers.js';

/**
 * The podman driver proves agents' isolation by effect before any replica runs (issue 13):
 * where it cannot be proven, deploys fail with the reason and no container starts; and the
 * same effect holds on podman's other network backend, CNI, whose bridges are cni-podman*.
 */

const portOf = (url: string) => Number(new URL(url).port);

async function listen(host: string): Promise<Server> {
  const server = createServer((_, res) => res.end('listening'));
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  return server;
}

async function close(server: Server | undefined): Promise<void> {
  if (!server) return;
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
}

const portOfServer = (server: Server) => (server.address() as AddressInfo).port;

/** Deploys one agent and waits for the driver's verdict, which must be `failed`. */
async function deployFails(control: TestControl): Promise<{ id: string; error: string }> {
  const { token } = await control.signUp();
  const created = await control.request('POST', '/agents', {
    token,
    body: { name: 'unproven', api_key: 'sk-test', deploy: { replicas: 1, env: [{ key: 'MODE', value: 'serve' }] } },
  });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  const id: string = created.body.id;
  const agent = await waitFor(`agent ${id} to fail`, async () => {
    const response = await control.request('GET', `/agents/${id}`, { token });
    assert.notEqual(response.body.status, 'running', `agent ${id} runs although its isolation was not proven`);
    return response.body.status === 'failed' ? response.body : undefined;
  }, 60_000);
  const containers = await podman(control, ['ps', '--all', '--filter', `label=platform.agent-id=${id}`, '--format', '{{.Names}}']);
  assert.equal(containers.stdout.trim(), '', `a replica container exists: ${containers.stdout}`);
  return { id, error: agent.error as string };
}

describe('orchestration: the isolation check (podman)', function () {
  this.timeout(180_000);

  describe('fails closed', () => {
    let control: TestControl | undefined;
    let platformService: Server | undefined;
    const guard = `test_metadata_guard_${process.pid}`;

    afterEach(async () => {
      await control?.close();
      control = undefined;
      await close(platformService);
      platformService = undefined;
      execFileSync('nft', ['-f', '-'], { input: `table inet ${guard}\ndelete table inet ${guard}\n` });
    });

    it('refuses every replica when the probe cannot run, and says so', async () => {
      // A dynamically linked program in the probe's empty root cannot start: nothing is proven.
      control = await startControl({ PODMAN_PROBE_BUSYBOX: '/bin/true' }, { orchestrate: true });
      const { error } = await deployFails(control);
      assert.match(error, /isolation check could not run/, error);
    });

    it('refuses every replica when the rules do not hold, naming what agents could reach', async () => {
      // The driver's firewall off, as on a host where its rules do not apply. So that no
      // probe leaves this machine, a table of the test's own still refuses 169.254.0.0/16.
      execFileSync('nft', ['-f', '-'], {
        input: `table inet ${guard} {\n chain forward {\n  type filter hook forward priority filter - 10; policy accept;\n  ip daddr 169.254.0.0/16 reject\n }\n}\n`,
      });
      platformService = await listen('0.0.0.0');
      const port = portOfServer(platformService);
      control = await startControl({ PODMAN_FIREWALL: 'false', PODMAN_PROTECTED_ENDPOINTS: `127.0.0.1:${port}` }, { orchestrate: true });
      const { error } = await deployFails(control);
      assert.match(error, /would not be isolated/, error);
      assert.match(error, new RegExp(`127\\.0\\.0\\.1:${port} at [0-9.]+:${port} is reachable`), error);
    });
  });

  describe('on the CNI network backend', () => {
    let control: TestControl;
    let dir: string;
    let platformService: Server;
    let openService: Server;
    let unrelatedService: Server;

    before(async () => {
      // podman through a wrapper that selects CNI, with a subnet pool of its own so its
      // bridges never take the addresses of netavark networks that other suites create.
      dir = mkdtempSync(join(tmpdir(), 'podman-cni-'));
      writeFileSync(join(dir, 'containers.conf'), '[network]\nnetwork_backend = "cni"\ndefault_subnet_pools = [{base = "10.131.0.0/16", size = 24}]\n');
      writeFileSync(join(dir, 'podman'), `#!/bin/sh\nCONTAINERS_CONF=${join(dir, 'containers.conf')} exec podman "$@"\n`);
      chmodSync(join(dir, 'podman'), 0o755);
      platformService = await listen('0.0.0.0');
      openService = await listen('0.0.0.0');
      unrelatedService = await listen('0.0.0.0');
      control = await startControl(
        {
          PODMAN_BINARY: join(dir, 'podman'),
          PODMAN_PROTECTED_ENDPOINTS: `127.0.0.1:${portOfServer(platformService)}`,
          PODMAN_AGENT_HOST_PORTS: String(portOfServer(openService)),
          // Its bridges are not netavark's: a pool of its own.
          PODMAN_AGENT_SUBNETS: '10.131.0.0/16',
        },
        { orchestrate: true },
      );
    });

    after(async () => {
      await control?.close();
      await close(platformService);
      await close(openService);
      await close(unrelatedService);
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    it('keeps agents from each other, the platform and the metadata service, and publishes nothing', async () => {
      const backend = execFileSync(join(dir, 'podman'), ['info', '--format', '{{.Host.NetworkBackend}}'], { encoding: 'utf8' }).trim();
      assert.equal(backend, 'cni');
      const { token } = await control.signUp();
      const [a, b] = await Promise.all([createRunningAgent(control, token), createRunningAgent(control, token)]);
      const [network] = JSON.parse(execFileSync(join(dir, 'podman'), ['network', 'inspect', `agent-${a.id}`], { encoding: 'utf8' }));
      assert.match(network.network_interface, /^cni-podman\d+$/, 'the agent network is a CNI bridge');

      await assertIsolated(control, a, b, {
        platformPorts: {
          postgres: portOf(process.env.TEST_TEMPLATE_DATABASE_URL!),
          redis: portOf(process.env.TEST_REDIS_URL!),
          'a platform service on 0.0.0.0': portOfServer(platformService),
        },
        openHostPort: portOfServer(openService),
        unrelatedHostPort: portOfServer(unrelatedService),
      });
      for (const agent of [a, b]) await assertNothingPublished(control, agent);
      const health = await fetch(`http://${a.replica.address}/health`);
      assert.equal(health.status, 200, 'the host reaches a replica on its CNI network');
    });
  });
});
