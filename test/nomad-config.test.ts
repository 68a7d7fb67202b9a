import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../control/config/config.js';
import { LOCAL_RUNTIME_IMAGE } from '../control/config/runtime-image.js';
import { ConfigError } from '../contract/settings-reader.js';
import { systemClock } from '../contract/clock.js';
import { createOrchestrator, nomadAgentServices } from '../control/orchestrator/create.js';
import { pino } from 'pino';

const BASE = { DATABASE_URL: 'postgres://u:p@127.0.0.1/db', REDIS_URL: 'redis://127.0.0.1:6379', MASTER_KEY: Buffer.alloc(32, 7).toString('base64') };

describe('nomad driver: settings', () => {
  it('keeps podman the default and reads no Nomad setting then', () => {
    const config = loadConfig({ ...BASE, NOMAD_ADDR: 'not a url' });
    assert.equal(config.orchestrator, 'podman');
    assert.equal(config.nomad, null);
  });

  it('has the documented defaults with ORCHESTRATOR=nomad', () => {
    const config = loadConfig({ ...BASE, ORCHESTRATOR: 'nomad' });
    assert.equal(config.orchestrator, 'nomad');
    const nomad = config.nomad!;
    assert.deepEqual(
      { nomad: nomad.nomad, consul: nomad.consul },
      {
        nomad: { address: 'http://127.0.0.1:4646', token: null, ca: null, cert: null, key: null, skipVerify: false },
        consul: { address: 'http://127.0.0.1:8500', token: null, ca: null, cert: null, key: null, skipVerify: false },
      },
    );
    assert.deepEqual([nomad.namespace, nomad.region, nomad.datacenters, nomad.mhzPerVcpu, nomad.agentNodePool, nomad.watchMinIntervalMs, nomad.maxConnections], ['default', null, ['dc1'], 1000, 'agents', 1000, 32]);
    assert.equal(nomad.scalingTargetCpuPercent, 70);
  });

  it('reads every setting, TLS files included', () => {
    const dir = mkdtempSync(join(tmpdir(), 'nomad-tls-'));
    try {
      for (const name of ['ca.pem', 'cert.pem', 'key.pem']) writeFileSync(join(dir, name), `-----BEGIN ${name}-----`);
      const nomad = loadConfig({
        ...BASE,
        ORCHESTRATOR: 'nomad',
        NOMAD_ADDR: 'https://nomad.internal:4646/',
        NOMAD_TOKEN: 'nomad-token',
        NOMAD_NAMESPACE: 'agents',
        NOMAD_REGION: 'europe',
        NOMAD_DATACENTERS: 'eu1,eu2',
        NOMAD_CACERT: join(dir, 'ca.pem'),
        NOMAD_CLIENT_CERT: join(dir, 'cert.pem'),
        NOMAD_CLIENT_KEY: join(dir, 'key.pem'),
        CONSUL_HTTP_ADDR: 'https://consul.internal:8501',
        CONSUL_HTTP_TOKEN: 'consul-token',
        CONSUL_CACERT: join(dir, 'ca.pem'),
        NOMAD_MHZ_PER_VCPU: '2400',
        NOMAD_AGENT_NODE_POOL: 'agent-nodes',
        NOMAD_WATCH_MIN_INTERVAL_MS: '500',
        NOMAD_MAX_CONNECTIONS: '16',
        NOMAD_SCALING_TARGET_CPU_PERCENT: '55',
      }).nomad!;
      assert.deepEqual(nomad.nomad, { address: 'https://nomad.internal:4646', token: 'nomad-token', ca: '-----BEGIN ca.pem-----', cert: '-----BEGIN cert.pem-----', key: '-----BEGIN key.pem-----', skipVerify: false });
      assert.deepEqual([nomad.consul.address, nomad.consul.token, nomad.consul.ca], ['https://consul.internal:8501', 'consul-token', '-----BEGIN ca.pem-----']);
      assert.deepEqual([nomad.namespace, nomad.region, nomad.datacenters, nomad.mhzPerVcpu, nomad.agentNodePool, nomad.watchMinIntervalMs, nomad.maxConnections], ['agents', 'europe', ['eu1', 'eu2'], 2400, 'agent-nodes', 500, 16]);
      assert.equal(nomad.scalingTargetCpuPercent, 55);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('reports every bad Nomad setting at once', () => {
    assert.throws(
      () => loadConfig({ ...BASE, ORCHESTRATOR: 'nomad', NOMAD_ADDR: 'ftp://x', CONSUL_HTTP_ADDR: 'nope', NOMAD_MHZ_PER_VCPU: '0', NOMAD_CACERT: '/no/such/ca.pem', NOMAD_NAMESPACE: 'a b', NOMAD_DATACENTERS: ' , ', NOMAD_AGENT_NODE_POOL: 'all' }),
      (error: unknown) => {
        assert.ok(error instanceof ConfigError);
        assert.deepEqual(error.problems.map((p) => p.split(':')[0]).sort(), ['CONSUL_HTTP_ADDR', 'NOMAD_ADDR', 'NOMAD_AGENT_NODE_POOL', 'NOMAD_CACERT', 'NOMAD_DATACENTERS', 'NOMAD_MHZ_PER_VCPU', 'NOMAD_NAMESPACE']);
        return true;
      },
    );
    assert.throws(() => loadConfig({ ...BASE, ORCHESTRATOR: 'kubernetes' }), /ORCHESTRATOR: expected one of podman, nomad/);
  });

  it('names the bounds of every bad number, Nomad and podman settings in one list, a shared one once', () => {
    assert.throws(
      () => loadConfig({
        ...BASE,
        ORCHESTRATOR: 'nomad',
        NOMAD_MHZ_PER_VCPU: '0',
        NOMAD_MAX_CONNECTIONS: '200',
        NOMAD_WATCH_MIN_INTERVAL_MS: 'soon',
        NOMAD_SCALING_TARGET_CPU_PERCENT: '0',
        // Read by both drivers, with the same bounds.
        RESTART_BUDGET: '1.5',
        DRAIN_SECONDS: '-2',
        PODMAN_POLL_INTERVAL_MS: '0',
      }),
      (error: unknown) => {
        assert.ok(error instanceof ConfigError);
        assert.deepEqual([...error.problems].sort(), [
          'DRAIN_SECONDS: expected a number from 0 to 3600, got "-2"',
          'NOMAD_MAX_CONNECTIONS: expected an integer from 4 to 90, got "200"',
          'NOMAD_MHZ_PER_VCPU: expected a number from 1 to 100000, got "0"',
          'NOMAD_SCALING_TARGET_CPU_PERCENT: expected an integer from 1 to 100 (percent of the allocated CPU, which cpu_hard_limit caps at 100), got "0"',
          'NOMAD_WATCH_MIN_INTERVAL_MS: expected a number from 0 to 60000, got "soon"',
          'PODMAN_POLL_INTERVAL_MS: expected a number from 10 to 60000, got "0"',
          'RESTART_BUDGET: expected an integer from 0 to 100, got "1.5"',
        ]);
        return true;
      },
    );
  });
});

describe('nomad driver: the agent services (NOMAD_AGENT_SERVICES_URL)', () => {
  const nomadConfig = (env: Record<string, string> = {}) => loadConfig({ ...BASE, ORCHESTRATOR: 'nomad', ...env });

  it('gives replicas the agent services only with a URL and the listener on, with the token TTL and session size', () => {
    assert.equal(nomadConfig().nomad!.agentServicesUrl, null);
    assert.equal(nomadAgentServices(nomadConfig()), null, 'no URL: replicas keep conversations in memory');
    assert.equal(nomadAgentServices(nomadConfig({ NOMAD_AGENT_SERVICES_URL: 'http://10.0.1.5:7090', AGENT_SERVICES_PORT: '0' })), null, 'the listener off');
    const config = nomadConfig({ NOMAD_AGENT_SERVICES_URL: 'https://agent-services.internal:7090/', AGENT_SERVICES_TOKEN_TTL_SECONDS: '900', SESSION_MAX_BYTES: '65536' });
    assert.deepEqual(nomadAgentServices(config), { url: 'https://agent-services.internal:7090', tokenTtlSeconds: 900, maxSessionBytes: 65536 });
  });

  it('refuses a URL the runtime could not append /v1 to, or not http(s)', () => {
    for (const [value, problem] of [
      ['ftp://10.0.1.5:7090', 'NOMAD_AGENT_SERVICES_URL: expected a http: or https:// URL, got ftp://'],
      ['not a url', 'NOMAD_AGENT_SERVICES_URL: not a valid URL'],
      ['http://10.0.1.5:7090/?x=1', 'NOMAD_AGENT_SERVICES_URL: a URL without credentials, query or fragment (replicas append /v1/… to it)'],
      ['http://user:secret@10.0.1.5:7090', 'NOMAD_AGENT_SERVICES_URL: a URL without credentials, query or fragment (replicas append /v1/… to it)'],
    ]) {
      assert.throws(() => nomadConfig({ NOMAD_AGENT_SERVICES_URL: value! }), (error: unknown) => {
        assert.ok(error instanceof ConfigError);
        assert.deepEqual(error.problems, [problem], value);
        return true;
      });
    }
  });

  it('says at start, on Nomad, that replicas keep conversations in memory when agent nodes were given no address', async () => {
    const lines: Record<string, unknown>[] = [];
    const logger = pino({ level: 'warn' }, { write: (line: string) => lines.push(JSON.parse(line)) });
    // Nothing answers at port 9: the driver only starts its watches, and is closed at once.
    const unreachable = { NOMAD_ADDR: 'http://127.0.0.1:9', CONSUL_HTTP_ADDR: 'http://127.0.0.1:9' };
    for (const [env, setting] of [[{}, 'NOMAD_AGENT_SERVICES_URL'], [{ NOMAD_AGENT_SERVICES_URL: 'http://10.0.1.5:7090', AGENT_SERVICES_PORT: '0' }, 'AGENT_SERVICES_PORT'], [{ NOMAD_AGENT_SERVICES_URL: 'http://10.0.1.5:7090' }, null]] as const) {
      lines.length = 0;
      const started = await createOrchestrator(nomadConfig({ ...unreachable, ...env }), systemClock, logger);
      await started.orchestrator.close();
      const said = lines.filter((line) => String(line.msg).includes('keep conversations in memory'));
      assert.deepEqual(said.map((line) => line.setting), setting ? [setting] : [], JSON.stringify(env));
    }
  });
});

describe('nomad driver: TLS verification', () => {
  it('is never turned off from the environment: NOMAD_SKIP_VERIFY, a test setting once, stops the control API at start', () => {
    for (const value of ['true', 'false']) {
      assert.throws(() => loadConfig({ ...BASE, ORCHESTRATOR: 'nomad', NOMAD_SKIP_VERIFY: value }), (error: unknown) => {
        assert.ok(error instanceof ConfigError);
        assert.deepEqual(error.problems, ["NOMAD_SKIP_VERIFY: not read: the control API always verifies Nomad's certificate; name a private CA in NOMAD_CACERT"]);
        return true;
      });
    }
  });
});

describe('nomad driver: the runtime image', () => {
  const DIGEST = `sha256:${'a'.repeat(64)}`;
  const loadWith = (env: Record<string, string>) => loadConfig({ ...BASE, ...env });

  it('defaults, on either driver, to the local tag of the package version that npm run up builds, never "latest"', () => {
    assert.match(LOCAL_RUNTIME_IMAGE, /^localhost\/agent-runtime:\d+\.\d+\.\d+/);
    assert.equal(loadWith({}).runtimeImage, LOCAL_RUNTIME_IMAGE);
    assert.equal(loadWith({ ORCHESTRATOR: 'nomad' }).runtimeImage, LOCAL_RUNTIME_IMAGE);
  });

  it('refuses with ORCHESTRATOR=nomad an image the docker driver pulls at every start (untagged or "latest"), and takes a tag or a digest', () => {
    for (const image of ['registry.example.com/agent-runtime', 'registry.example.com/agent-runtime:latest', 'registry.example.com:5000/agent-runtime']) {
      assert.throws(() => loadWith({ ORCHESTRATOR: 'nomad', RUNTIME_IMAGE: image }), (error: unknown) => {
        assert.ok(error instanceof ConfigError);
        assert.equal(error.problems.length, 1);
        assert.match(error.problems[0]!, new RegExp(`^RUNTIME_IMAGE: ${image.replaceAll('.', '\\.')} is (untagged|tagged "latest"), which Nomad's docker driver pulls at every start`));
        return true;
      }, image);
    }
    for (const image of ['registry.example.com:5000/agent-runtime:0.1.0-3f2c1ab', `registry.example.com/agent-runtime@${DIGEST}`, `registry.example.com/agent-runtime:latest@${DIGEST}`]) {
      assert.equal(loadWith({ ORCHESTRATOR: 'nomad', RUNTIME_IMAGE: image }).runtimeImage, image);
    }
    // podman runs the host's copy of a local image whatever its tag.
    assert.equal(loadWith({ RUNTIME_IMAGE: 'localhost/agent-runtime:latest' }).runtimeImage, 'localhost/agent-runtime:latest');
  });

  it('stops the control API at start with exit code 78 and one line naming RUNTIME_IMAGE', () => {
    const started = spawnSync(process.execPath, ['--import', 'tsx', 'control/main.ts'], {
      env: { PATH: process.env.PATH, ...BASE, ORCHESTRATOR: 'nomad', RUNTIME_IMAGE: 'localhost/agent-runtime:latest' },
      encoding: 'utf8',
      timeout: 60_000,
    });
    assert.equal(started.status, 78, started.stderr);
    const problems = started.stderr.split('\n').filter((line) => line.startsWith('  - '));
    assert.deepEqual(problems.map((line) => line.split(':')[0]), ['  - RUNTIME_IMAGE']);
    assert.match(problems[0]!, /localhost\/agent-runtime:latest is tagged "latest"/);
  });
});
