import { strict as assert } from 'node:assert';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startControl, type TestControl } from './support/control-harness.js';
import { agentNetwork, assertIsolated, assertNothingPublished } from './support/isolation-effect.js';
import { createRunningAgent, execIn, inspect, podman, waitFor } from './support/orch-helpers.js';

/**
 * The container requirements of docs/contract.md ("Runtime contract v1") checked on real podman containers: no capability
 * beyond the default set, no new privileges, 512 processes, the resource limits, exactly
 * the documented environment, and a network from which only the outside world is reachable.
 */

// podman's default capability set, as bit numbers of linux/capability.h.
const DEFAULT_CAPABILITY_BITS = {
  CHOWN: 0, DAC_OVERRIDE: 1, FOWNER: 3, FSETID: 4, KILL: 5, SETGID: 6, SETUID: 7,
  SETPCAP: 8, NET_BIND_SERVICE: 10, SYS_CHROOT: 18, SETFCAP: 31,
} as const;
const DEFAULT_CAPABILITY_MASK = Object.values(DEFAULT_CAPABILITY_BITS).reduce((mask, bit) => mask | (1n << BigInt(bit)), 0n);

const statusField = (status: string, field: string) => {
  const match = new RegExp(`^${field}:\\t(.*)$`, 'm').exec(status);
  assert.ok(match, `${field} is missing from /proc/self/status:\n${status}`);
  return match[1]!.trim();
};

const portOf = (url: string) => Number(new URL(url).port);

describe('orchestration: container security (podman)', function () {
  this.timeout(180_000);
  let control: TestControl;
  /** A service on 0.0.0.0 that the control names as the platform's (as authz or the edge would be): reachable from the host's every address. */
  let platformService: Server;
  /** A service on 0.0.0.0 the operator opens to agents (PODMAN_AGENT_HOST_PORTS), as a model server on the host would be. */
  let modelServer: Server;

  before(async () => {
    platformService = createServer((_, res) => res.end('platform-only'));
    modelServer = createServer((_, res) => res.end('model-server'));
    for (const server of [platformService, modelServer]) await new Promise<void>((resolve) => server.listen(0, '0.0.0.0', resolve));
    const port = (platformService.address() as AddressInfo).port;
    control = await startControl(
      { PODMAN_PROTECTED_ENDPOINTS: `127.0.0.1:${port}`, PODMAN_AGENT_HOST_PORTS: String((modelServer.address() as AddressInfo).port) },
      { orchestrate: true },
    );
  });

  after(async () => {
    await control?.close();
    for (const server of [platformService, modelServer]) {
      server?.closeAllConnections();
      await new Promise((resolve) => server?.close(resolve));
    }
  });

  it('runs a replica without added capabilities, without new privileges, and with the limits of its deploy', async () => {
    const { token } = await control.signUp();
    const { id, replica } = await createRunningAgent(control, token, { deploy: { resources: { cpu: 0.5, memory_mb: 256 } } });

    const proc = await execIn(control, replica.id, 'cat /proc/self/status');
    assert.equal(proc.code, 0, proc.stderr);
    assert.equal(statusField(proc.stdout, 'NoNewPrivs'), '1');
    assert.equal(statusField(proc.stdout, 'Uid').split(/\s+/)[0], '1000', 'the test image runs as uid 1000');
    for (const field of ['CapEff', 'CapPrm', 'CapAmb', 'CapInh', 'CapBnd']) {
      const value = BigInt(`0x${statusField(proc.stdout, field)}`);
      assert.equal(value & ~DEFAULT_CAPABILITY_MASK, 0n, `${field} ${value.toString(16)} holds a capability beyond podman's default set`);
    }
    // As with podman's defaults, a non-root process holds no capability (only the bounding set is kept).
    for (const field of ['CapEff', 'CapPrm', 'CapAmb']) {
      assert.equal(statusField(proc.stdout, field), '0000000000000000', `${field} of a uid-1000 process is not empty`);
    }
    const main = await execIn(control, replica.id, 'cat /proc/1/status');
    assert.equal(statusField(main.stdout, 'NoNewPrivs'), '1', 'the main process cannot gain privileges');
    assert.equal(statusField(main.stdout, 'CapEff'), '0000000000000000', 'the main process (uid 1000) holds capabilities');

    const info = await inspect(control, replica.id);
    const host = info.HostConfig;
    assert.equal(host.PidsLimit, 512);
    assert.equal(host.Memory, 256 * 1024 * 1024);
    assert.equal(host.NanoCpus, 0.5 * 1e9);
    // The driver names podman's default set explicitly; podman shows what differs from its configured default.
    const capAdd: string[] = (host.CapAdd ?? []).map((c: string) => c.replace(/^CAP_/, ''));
    const capDrop: string[] = (host.CapDrop ?? []).map((c: string) => c.replace(/^CAP_/, ''));
    const beyondDefault = capAdd.filter((capability) => !(capability in DEFAULT_CAPABILITY_BITS));
    assert.deepEqual(beyondDefault, [], `CapAdd holds capabilities beyond podman's default set: ${capAdd.join(', ')}`);
    for (const capability of ['NET_RAW', 'MKNOD', 'AUDIT_WRITE', 'SYS_ADMIN', 'NET_ADMIN', 'SYS_PTRACE']) {
      assert.ok(!capAdd.includes(capability), `${capability} is added`);
    }
    assert.ok(capDrop.every((capability) => !capAdd.includes(capability)), `CapAdd ${capAdd} and CapDrop ${capDrop} overlap`);
    assert.ok((host.SecurityOpt ?? []).some((opt: string) => /no-new-privileges/.test(opt)), `SecurityOpt: ${JSON.stringify(host.SecurityOpt)}`);
    assert.equal(host.Privileged, false);

    // Nothing is published on the host (a local process could reach a private agent without
    // its key); the edge reaches the replica at its address on the agent's network.
    await assertNothingPublished(control, { id, agent: undefined, replica });
    const health = await fetch(`http://${replica.address}/health`);
    assert.equal(health.status, 200, 'the host reaches the replica on its network');
    assert.equal(await control.request('DELETE', `/agents/${id}`, { token }).then((r) => r.status), 204);
  });

  it('stops a fork bomb at 512 processes and the agent stays manageable', async () => {
    const { token } = await control.signUp();
    const [{ id, replica }, neighbour] = await Promise.all([createRunningAgent(control, token), createRunningAgent(control, token)]);

    // The loop runs in a subshell (ash gives up at the first failed fork); counting and
    // reporting use builtins only, since no process can be started once the limit is hit.
    const script = [
      '( i=0; while [ $i -lt 600 ]; do sleep 300 & i=$((i+1)); done ) 2>/tmp/fork-errors',
      'total=0; sleeping=0',
      'for d in /proc/[0-9]*; do',
      '  c=""; read c < $d/comm 2>/dev/null || continue',
      '  total=$((total+1)); [ "$c" = sleep ] && sleeping=$((sleeping+1))',
      'done',
      'failures=0; while read line; do case "$line" in *fork*|*esource*) failures=$((failures+1));; esac; done < /tmp/fork-errors',
      'echo "total=$total sleeping=$sleeping failures=$failures"',
    ].join('\n');
    const bomb = await execIn(control, replica.id, script, 120_000);
    const counts = /total=(\d+) sleeping=(\d+) failures=(\d+)/.exec(bomb.stdout);
    assert.ok(counts, `the fork bomb reported nothing: code ${bomb.code}, stdout ${bomb.stdout}, stderr ${bomb.stderr}`);
    const [, total, sleeping, failures] = counts.map(Number) as [number, number, number, number];
    assert.ok(sleeping > 100, `the fork bomb did run (${sleeping} sleeps started)`);
    assert.ok(sleeping <= 512, `${sleeping} sleeps run: more than 512 processes`);
    assert.ok(total <= 512, `${total} processes in the container: more than 512`);
    assert.ok(failures >= 1, 'the shell reported failed forks');

    // While the bomb holds its processes, another agent's replica still starts processes and serves.
    const other = await execIn(control, neighbour.replica.id, 'sleep 0 & wait; echo forked');
    assert.equal(other.stdout.trim(), 'forked', `another agent cannot start a process: ${other.stderr}`);
    assert.equal((await fetch(`http://${neighbour.replica.address}/health`)).status, 200);

    const agent = await control.request('GET', `/agents/${id}`, { token });
    assert.equal(agent.status, 200);
    assert.equal(agent.body.status, 'running');
    const deleted = await control.request('DELETE', `/agents/${id}`, { token });
    assert.equal(deleted.status, 204);
    assert.equal((await control.request('GET', `/agents/${id}`, { token })).status, 404);
    // DELETE answers once Postgres forgets the agent; its containers go right after.
    await waitFor('the replica to be removed', async () => {
      const left = await podman(control, ['ps', '--all', '--filter', `label=platform.agent-id=${id}`, '--format', '{{.Names}}']);
      return left.stdout.trim() === '' ? true : undefined;
    }, 60_000);
  });

  it('gives the container exactly the environment of docs/contract.md, secrets decrypted only there', async () => {
    const { token } = await control.signUp();
    const prompt = 'You are terse.\nLine two: "quoted" $HOME `tick`\n\n  indented line four';
    const secret = 'sv-secret value=with spaces';
    const { id, agent, replica } = await createRunningAgent(control, token, {
      name: 'env-agent',
      model: 'gpt-4o',
      api_key: 'sk-test-creation-key',
      system_prompt: prompt,
      deploy: {
        env: [
          { key: 'MODE', value: 'serve' },
          { key: 'PLAIN_SETTING', value: 'plain-value' },
          { key: 'SECRET_TOKEN', value: secret, secret: true },
        ],
      },
    });

    const text = await (await fetch(`http://${replica.address}/cgi-bin/env`)).text();
    assert.ok(text.includes(`\nSYSTEM_PROMPT=${prompt}\n`) || text.startsWith(`SYSTEM_PROMPT=${prompt}\n`), `the multi-line prompt did not arrive intact:\n${text}`);
    const env = new Map<string, string>();
    for (const line of text.replace(`SYSTEM_PROMPT=${prompt}`, 'SYSTEM_PROMPT=<checked>').split('\n')) {
      const eq = line.indexOf('=');
      if (eq > 0 && /^[A-Za-z_][A-Za-z0-9_]*$/.test(line.slice(0, eq))) env.set(line.slice(0, eq), line.slice(eq + 1));
    }
    const expected: Record<string, string> = {
      AGENT_ID: id,
      AGENT_NAME: 'env-agent',
      LLM_MODEL: 'gpt-4o',
      LLM_PROVIDER: 'openai',
      OPENAI_API_KEY: 'sk-test-creation-key',
      MODE: 'serve',
      PLAIN_SETTING: 'plain-value',
      SECRET_TOKEN: secret,
    };
    for (const [key, value] of Object.entries(expected)) assert.equal(env.get(key), value, `${key} in the container`);
    for (const key of ['ANTHROPIC_API_KEY', 'GOOGLE_API_KEY', 'DATABASE_URL', 'REDIS_URL', 'MASTER_KEY', 'PORT', 'NODE_ENV', 'PODMAN_INSTANCE', 'RUNTIME_IMAGE']) {
      assert.ok(!env.has(key), `${key} leaked into the container`);
    }
    for (const key of env.keys()) assert.ok(!key.startsWith('CONTROL_') && !key.startsWith('TEST_') && !key.startsWith('npm_'), `${key} leaked into the container`);
    for (const value of [process.env.TEST_TEMPLATE_DATABASE_URL!, process.env.TEST_REDIS_URL!]) {
      assert.ok(!text.includes(value), 'a platform service address leaked into the container');
    }
    // The agent services' (issue 37): the one platform endpoint a replica reaches, with a token file of its own.
    assert.match(env.get('AGENT_SERVICES_URL') ?? '', /^http:\/\/host\.containers\.internal:\d+$/);
    assert.equal(env.get('AGENT_SERVICES_TOKEN_FILE'), '/run/agent-services/token');
    assert.equal(env.get('SESSION_MAX_BYTES'), '1048576');
    // Besides docs/contract.md's variables and deploy.env, only what podman and the CGI server themselves set.
    const platform = new Set([...Object.keys(expected), 'SYSTEM_PROMPT', 'AGENT_SERVICES_URL', 'AGENT_SERVICES_TOKEN_FILE', 'SESSION_MAX_BYTES']);
    const fromRuntime = /^(PATH|HOME|HOSTNAME|TERM|container|PWD|SHLVL|GATEWAY_INTERFACE|SERVER_[A-Z_]+|REQUEST_[A-Z_]+|REMOTE_[A-Z_]+|HTTP_[A-Z_]+|SCRIPT_[A-Z_]+|PATH_INFO|QUERY_STRING|CONTENT_[A-Z_]+|_)$/;
    const unexpected = [...env.keys()].filter((key) => !platform.has(key) && !fromRuntime.test(key));
    assert.deepEqual(unexpected, [], `variables beyond docs/contract.md's table: ${unexpected.join(', ')}`);

    // Secrets stay out of the API's answers.
    for (const body of [agent, (await control.request('GET', `/agents/${id}`, { token })).body]) {
      const entry = body.deploy.env.find((e: { key: string }) => e.key === 'SECRET_TOKEN');
      assert.equal(entry.value, '***');
      assert.equal(entry.secret, true);
      assert.equal(body.deploy.env.find((e: { key: string }) => e.key === 'PLAIN_SETTING').value, 'plain-value');
      const serialized = JSON.stringify(body);
      assert.ok(!serialized.includes(secret) && !serialized.includes('sk-test-creation-key'), 'a secret appears in the API response');
    }
    const listed = JSON.stringify((await control.request('GET', '/agents', { token })).body);
    assert.ok(!listed.includes(secret) && !listed.includes('sk-test-creation-key'), 'a secret appears in the agent listing');
    // ...and out of podman's view of the container's configuration arguments.
    const info = await inspect(control, replica.id);
    assert.ok(!JSON.stringify(info.Config?.Cmd ?? []).includes(secret) && !JSON.stringify(info.Args ?? []).includes(secret));
  });

  it('lets deploy.env set OPENAI_API_KEY over the api_key given at creation', async () => {
    const { token } = await control.signUp();
    const { replica } = await createRunningAgent(control, token, {
      api_key: 'sk-from-create',
      deploy: { env: [{ key: 'MODE', value: 'serve' }, { key: 'OPENAI_API_KEY', value: 'sk-from-env', secret: true }] },
    });
    const text = await (await fetch(`http://${replica.address}/cgi-bin/env`)).text();
    const keys = text.split('\n').filter((line) => line.startsWith('OPENAI_API_KEY='));
    assert.deepEqual(keys, ['OPENAI_API_KEY=sk-from-env']);
    assert.ok(!text.includes('sk-from-create'), 'the creation key still reaches the container');
  });

  describe('network isolation', () => {
    const servers: Server[] = [];

    const serve = async (host: string, body: string): Promise<number> => {
      const server = createServer((_, res) => res.end(body));
      servers.push(server);
      await new Promise<void>((resolve) => server.listen(0, host, resolve));
      return (server.address() as AddressInfo).port;
    };

    afterEach(async () => {
      for (const server of servers.splice(0)) {
        server.closeAllConnections();
        await new Promise((resolve) => server.close(resolve));
      }
    });

    it('keeps a replica from other agents, the platform\'s services, the host\'s other services and the metadata service', async () => {
      const { token } = await control.signUp();
      const [a, b] = await Promise.all([createRunningAgent(control, token), createRunningAgent(control, token)]);
      const expectations = {
        // On 127.0.0.1 (Postgres, Redis, the control API) or on 0.0.0.0 (the service named in PODMAN_PROTECTED_ENDPOINTS).
        platformPorts: {
          postgres: portOf(process.env.TEST_TEMPLATE_DATABASE_URL!),
          redis: portOf(process.env.TEST_REDIS_URL!),
          'control API': portOf(control.baseUrl),
          'a platform service on 0.0.0.0': (platformService.address() as AddressInfo).port,
        },
        openHostPort: (modelServer.address() as AddressInfo).port,
        // sshd, a database, a dev server: on every address, named nowhere.
        unrelatedHostPort: await serve('0.0.0.0', 'unrelated'),
      };
      await assertIsolated(control, a, b, expectations);
      for (const agent of [a, b]) await assertNothingPublished(control, agent);
      // The one host service every agent reaches: aardvark-dns on its network's gateway, which knows the replica's name.
      const { IPAddress, Gateway } = await agentNetwork(control, a);
      const dns = await execIn(control, a.replica.id, `/bin/busybox nslookup ${a.replica.id} ${Gateway}`, 30_000);
      assert.ok(dns.stdout.includes(IPAddress), `DNS at ${Gateway} did not answer from behind the fence: ${dns.stdout} ${dns.stderr}`);

      // Isolation must outlive other agents: deleting a third agent (its network and
      // replica torn down) leaves A and B as separated as before.
      const c = await createRunningAgent(control, token);
      assert.equal((await control.request('DELETE', `/agents/${c.id}`, { token })).status, 204);
      await waitFor(`the replica of ${c.id} removed`, async () => {
        const left = await podman(control, ['ps', '--all', '--filter', `label=platform.agent-id=${c.id}`, '--format', '{{.Names}}']);
        return left.code === 0 && left.stdout.trim() === '' ? true : undefined;
      });
      await assertIsolated(control, a, b, expectations);

      const agentA = await control.request('GET', `/agents/${a.id}`, { token });
      assert.equal(agentA.body.status, 'running');
      await waitFor('both agents deleted', async () => {
        const statuses = await Promise.all([a.id, b.id].map((agentId) => control.request('DELETE', `/agents/${agentId}`, { token }).then((r) => r.status)));
        return statuses.every((s) => s === 204 || s === 404) ? true : undefined;
      });
    });
  });
});
