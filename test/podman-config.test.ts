import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { systemClock } from '../contract/clock.js';
import { loadConfig } from '../control/config/config.js';
import { ConfigError } from '../contract/settings-reader.js';
import { createOrchestrator } from '../control/orchestrator/create.js';
import { podmanEnvironmentOf } from '../control/orchestrator/podman/child-environment.js';
import { defaultStateDirectory, detectHost, hostDirectories, prepareStateDirectory, stateDirectoryOf, type HostDirectories } from '../control/orchestrator/podman/host.js';

const BASE = { DATABASE_URL: 'postgres://u:p@127.0.0.1/db', REDIS_URL: 'redis://127.0.0.1:6379', MASTER_KEY: Buffer.alloc(32, 7).toString('base64') };

/** A host whose TMPDIR is /tmp and where only `existing` paths are there. */
const hostWith = ({ root, userRuntimeDirectory, existing = [] }: { root: boolean; userRuntimeDirectory?: string; existing?: string[] }): HostDirectories => ({
  root,
  userRuntimeDirectory,
  temporaryDirectory: '/tmp',
  exists: (path) => existing.includes(path),
});

/** The problems loadConfig reports for `env`, as the operator reads them. */
function problemsOf(env: Record<string, string>): string[] {
  try {
    loadConfig({ ...BASE, ...env });
  } catch (error) {
    if (error instanceof ConfigError) return [...error.problems].sort();
    throw error;
  }
  assert.fail('expected a ConfigError');
}

describe('podman driver: settings', () => {
  it('has the documented defaults', () => {
    const { agentSubnets, ...podman } = loadConfig(BASE).podman;
    assert.equal(agentSubnets.cidr, '10.89.0.0/16');
    assert.deepEqual(
      { ...podman },
      {
        binary: 'podman', instance: 'default', stateDirectory: null, runtime: null, nofileLimit: null, nprocLimit: null,
        startGraceMs: 30_000, restartBudget: 5, restartBackoffBaseMs: 1000, restartBackoffMaxMs: 30_000, pollIntervalMs: 1000,
        firewall: true, networkBackend: null, probeBusybox: '/bin/busybox', probeConnectTimeoutSeconds: 2, protectedEndpoints: [],
        agentHostPorts: [], drainMs: 2000, stopTimeoutSeconds: 10, pullTimeoutMs: 120_000, registryCertsDir: null, environment: {},
      },
    );
  });

  it("keeps the driver's files in PODMAN_STATE_DIR, made absolute", () => {
    assert.equal(loadConfig({ ...BASE, PODMAN_STATE_DIR: '/var/lib/agent-platform' }).podman.stateDirectory, '/var/lib/agent-platform');
    // A mount's source as podman is given it, whichever directory the control API was started in.
    assert.equal(loadConfig({ ...BASE, PODMAN_STATE_DIR: 'state/podman' }).podman.stateDirectory, join(process.cwd(), 'state/podman'));
    assert.equal(stateDirectoryOf(loadConfig({ ...BASE, PODMAN_STATE_DIR: '/srv/podman' }).podman, hostWith({ root: true, existing: ['/tmp/agent-platform-default'] })), '/srv/podman');
  });

  it("keeps them, unset, where podman keeps the state of this boot, never in a /tmp a service may have to itself", () => {
    const blue = loadConfig({ ...BASE, PODMAN_INSTANCE: 'blue' }).podman;
    assert.equal(stateDirectoryOf(blue, hostWith({ root: true })), '/run/agent-platform-blue');
    assert.equal(stateDirectoryOf(blue, hostWith({ root: false, userRuntimeDirectory: '/run/user/1000' })), '/run/user/1000/agent-platform-blue');
    // A user without a login session's directory has nowhere else of its own.
    assert.equal(stateDirectoryOf(blue, hostWith({ root: false })), '/tmp/agent-platform-blue');
  });

  it('keeps them where the default was before while that directory is there, since running replicas mount from it', () => {
    const blue = loadConfig({ ...BASE, PODMAN_INSTANCE: 'blue' }).podman;
    assert.equal(stateDirectoryOf(blue, hostWith({ root: true, existing: ['/tmp/agent-platform-blue'] })), '/tmp/agent-platform-blue');
    assert.equal(stateDirectoryOf(blue, hostWith({ root: true, existing: ['/tmp/agent-platform-green'] })), '/run/agent-platform-blue', "another instance's is not this one's");
  });

  it("makes the driver's directory, every missing level, and leaves nothing in it", () => {
    const scratch = mkdtempSync(join(tmpdir(), 'state-dir-'));
    try {
      const directory = join(scratch, 'a', 'b', 'agent-platform-blue');
      prepareStateDirectory(directory);
      assert.ok(statSync(directory).isDirectory());
      assert.deepEqual(readdirSync(directory), []);
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
  });

  it('stops the control API at start, naming PODMAN_STATE_DIR and the reason, where the directory cannot be written', async () => {
    const scratch = mkdtempSync(join(tmpdir(), 'state-dir-'));
    try {
      writeFileSync(join(scratch, 'a-file'), '');
      const config = loadConfig({ ...BASE, PODMAN_INSTANCE: `test-state-${process.pid}`, PODMAN_STATE_DIR: join(scratch, 'a-file', 'state') });
      await assert.rejects(createOrchestrator(config, systemClock, pino({ level: 'silent' })), (error: unknown) => {
        assert.ok(error instanceof ConfigError);
        assert.deepEqual(error.problems.map((problem) => problem.split(':')[0]), ['PODMAN_STATE_DIR']);
        assert.match(error.problems[0]!, /cannot write its files in .*a-file\/state \(ENOTDIR\)/);
        return true;
      });
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
  });

  it('reports every bad podman setting at once, each with its bounds or what was expected', () => {
    assert.deepEqual(
      problemsOf({
        PODMAN_INSTANCE: 'a b',
        PODMAN_NOFILE_LIMIT: '0',
        PODMAN_NPROC_LIMIT: '5000000',
        PODMAN_POLL_INTERVAL_MS: 'fast',
        PODMAN_FIREWALL: 'maybe',
        PODMAN_NETWORK_BACKEND: 'slirp4netns',
        PODMAN_PROBE_TIMEOUT_SECONDS: '1.5',
        PODMAN_PROTECTED_ENDPOINTS: 'nope',
        PODMAN_AGENT_SUBNETS: '10.89.0.1/16',
        PODMAN_AGENT_HOST_PORTS: '11434,http',
        START_GRACE_SECONDS: '-1',
        RESTART_BUDGET: '1.5',
        STOP_TIMEOUT_SECONDS: '2.5',
        PULL_TIMEOUT_SECONDS: '0',
      }),
      [
        'PODMAN_AGENT_HOST_PORTS: expected TCP ports (1-65535) separated by commas, got "http"',
        'PODMAN_AGENT_SUBNETS: 10.89.0.1/16 has host bits set; did you mean 10.89.0.0/16?',
        'PODMAN_FIREWALL: expected true or false, got "maybe"',
        'PODMAN_INSTANCE: expected letters, digits, ".", "_" or "-" (1 to 64), got "a b"',
        'PODMAN_NETWORK_BACKEND: expected one of netavark, cni, got "slirp4netns"',
        'PODMAN_NOFILE_LIMIT: expected an integer from 1 to 1048576 (Linux\'s default fs.nr_open), got "0"',
        'PODMAN_NPROC_LIMIT: expected an integer from 1 to 4194304 (Linux\'s highest pid_max), got "5000000"',
        'PODMAN_POLL_INTERVAL_MS: expected a number from 10 to 60000, got "fast"',
        'PODMAN_PROBE_TIMEOUT_SECONDS: expected an integer from 1 to 60, got "1.5"',
        'PODMAN_PROTECTED_ENDPOINTS: expected host:port items, got "nope"',
        'PULL_TIMEOUT_SECONDS: expected a number from 1 to 86400, got "0"',
        'RESTART_BUDGET: expected an integer from 0 to 100, got "1.5"',
        'START_GRACE_SECONDS: expected a number from 0 to 3600, got "-1"',
        'STOP_TIMEOUT_SECONDS: expected an integer from 0 to 3600, got "2.5"',
      ],
    );
  });

  it('lists podman problems beside the others in one ConfigError', () => {
    assert.deepEqual(problemsOf({ CONTROL_PORT: '70000', PODMAN_NOFILE_LIMIT: 'many', MASTER_KEY: '' }), [
      'CONTROL_PORT: expected an integer from 0 to 65535, got "70000"',
      'MASTER_KEYS, MASTER_KEYS_FILE, MASTER_KEY or MASTER_KEY_FILE: one is required, 32 bytes in base64 each (openssl rand -base64 32); they encrypt model keys and secrets at rest',
      'PODMAN_NOFILE_LIMIT: expected an integer from 1 to 1048576 (Linux\'s default fs.nr_open), got "many"',
    ]);
  });

  it('leaves what the host decides to detectHost, where the driver is created', () => {
    const loaded = loadConfig(BASE).podman;
    assert.deepEqual([loaded.stateDirectory, loaded.runtime, loaded.nofileLimit, loaded.nprocLimit], [null, null, null, null], 'loading probes nothing');
    const host = detectHost(loaded);
    assert.equal(host.stateDirectory, stateDirectoryOf(loaded));
    assert.ok(Number.isInteger(host.nofileLimit) && host.nofileLimit >= 1 && host.nofileLimit <= 65_536, `nofile ${host.nofileLimit}`);
    assert.ok(Number.isInteger(host.nprocLimit) && host.nprocLimit >= 1, `nproc ${host.nprocLimit}`);
    assert.ok(host.runtime === null || host.runtime === 'runc', `runtime ${host.runtime}`);
    assert.equal(host.firewall && process.getuid?.() !== 0, false, 'the firewall runs only as root');
    assert.ok(Object.isFrozen(host));
  });

  it('keeps what the operator set over what the host offers', () => {
    const host = detectHost(loadConfig({ ...BASE, PODMAN_RUNTIME: 'crun', PODMAN_NOFILE_LIMIT: '4096', PODMAN_NPROC_LIMIT: '2048', PODMAN_FIREWALL: 'false' }).podman);
    assert.deepEqual([host.runtime, host.nofileLimit, host.nprocLimit, host.firewall], ['crun', 4096, 2048, false]);
  });
});

describe('podman driver: the environment podman runs with', () => {
  it("is what podman reads, never the control API's secrets or settings", () => {
    const environment = loadConfig({
      ...BASE,
      MASTER_KEY: '',
      PATH: '/usr/sbin:/usr/bin', HOME: '/root', XDG_RUNTIME_DIR: '/run/user/0', CONTAINERS_CONF: '/etc/x.conf', LC_ALL: 'C.UTF-8',
      HTTPS_PROXY: 'http://proxy:3128', REGISTRY_AUTH_FILE: '/etc/auth.json', PODMAN_REGISTRY_CERTS_DIR: '/certs',
      MASTER_KEYS: Buffer.alloc(32, 9).toString('base64'), NOMAD_TOKEN: 'secret', AWS_SECRET_ACCESS_KEY: 'x',
    }).podman.environment;
    assert.deepEqual(environment, {
      PATH: '/usr/sbin:/usr/bin', HOME: '/root', XDG_RUNTIME_DIR: '/run/user/0', CONTAINERS_CONF: '/etc/x.conf', LC_ALL: 'C.UTF-8',
      HTTPS_PROXY: 'http://proxy:3128', REGISTRY_AUTH_FILE: '/etc/auth.json',
    });
  });
});

/**
 * An installation that ran on the earlier default directory, $TMPDIR/agent-platform-<instance>,
 * keeps it while it is there, since its running replicas mount their tokens from it, and
 * is told so at start; a stop with no replica left removes it, and the next start is on
 * the new default (control/orchestrator/podman/host.ts, stateDirectoryOf).
 */
describe('podman driver: an installation on the earlier default directory', function () {
  this.timeout(120_000);
  const instance = `test-earlier-${process.pid}`;
  const earlier = join(tmpdir(), `agent-platform-${instance}`);
  const config = loadConfig({ ...BASE, ...podmanEnvironmentOf(process.env), PODMAN_INSTANCE: instance, AGENT_SERVICES_PORT: '0' });
  const newDefault = defaultStateDirectory(instance, hostDirectories(config.podman.environment));
  after(() => {
    for (const directory of [earlier, newDefault]) rmSync(directory, { recursive: true, force: true });
  });

  /** Starts and stops the driver; what it warned about the directory, and which of the two existed while it ran. */
  async function startAndStop() {
    const said: Record<string, unknown>[] = [];
    const logger = pino({ level: 'warn' }, { write: (line: string) => void said.push(JSON.parse(line)) });
    const started = await createOrchestrator(config, systemClock, logger);
    const whileRunning = { earlier: existsSync(earlier), newDefault: existsSync(newDefault) };
    await started.orchestrator.close();
    return { warnings: said.filter((line) => line.setting === 'PODMAN_STATE_DIR'), whileRunning };
  }

  it('keeps it and says so while it is there, removes it at a stop with nothing left in it, and starts next on the new default', async () => {
    mkdirSync(earlier);
    const first = await startAndStop();
    assert.deepEqual(first.warnings.map((line) => line.directory), [earlier]);
    assert.match(String(first.warnings[0]?.msg), /where an earlier version kept them, in TMPDIR/);
    assert.deepEqual(first.whileRunning, { earlier: true, newDefault: false });
    assert.equal(existsSync(earlier), false, 'the stop left nothing of it');

    const second = await startAndStop();
    assert.deepEqual(second.warnings, []);
    assert.deepEqual(second.whileRunning, { earlier: false, newDefault: true });
    assert.equal(existsSync(newDefault), false, 'nor of the new one');
  });
});
