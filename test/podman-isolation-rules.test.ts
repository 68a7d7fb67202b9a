import { strict as assert } from 'node:assert';
import { execFileSync } from 'node:child_process';
import { fenceScript, ownerComment, parseOwner, tableName } from '../control/orchestrator/podman/firewall-rules.js';
import { probeProblems, probeTargets, type ProbeTarget } from '../control/orchestrator/podman/isolation-probe.js';
import { parseEndpointList, platformEndpoints, resolveEndpoints, type ResolvedEndpoint } from '../control/orchestrator/podman/protected-endpoints.js';
import { runArguments } from '../control/orchestrator/podman/run-args.js';
import { detectHost } from '../control/orchestrator/podman/host.js';
import { readPodmanSettings } from '../control/orchestrator/podman/settings.js';
import { readSettings } from '../contract/settings-reader.js';
import type { JobSpec } from '../control/domain/job.js';

/**
 * The pure parts of the podman driver's isolation: the nftables table it writes, the
 * connects its probe makes and how their output is judged, the endpoints it protects,
 * and the run arguments (nothing published). The scripts are also checked by nft itself.
 */

const owner = { instance: 'test-rules', backend: 'netavark' };
const endpoints: ResolvedEndpoint[] = [
  { name: 'postgres', port: 5432, remoteAddresses: [], onHost: true },
  { name: 'redis', port: 6379, remoteAddresses: ['10.20.30.40'], onHost: false },
];

describe('podman isolation: firewall rules, probe and endpoints', () => {
  describe('the nftables table', () => {
    const networks = [{ name: 'agent-a', iface: 'podman3', gateway: '10.89.3.1' }, { name: 'agent-b', iface: 'cni-podman1', gateway: '10.89.7.1' }];
    // 5432 is also a platform port: naming it among the open ones must not open it.
    const script = fenceScript({ table: tableName(owner.instance), owner, networks, endpoints, openHostPorts: [11434, 5432] });
    const inputRules = (iface: string) => script.split('\n').map((l) => l.trim()).filter((l) => l.startsWith(`iifname "${iface}"`) && !l.includes('daddr 169.254') && !l.includes('10.20.30.40'));

    it('parses as nft would load it (nft --check)', () => {
      execFileSync('nft', ['--check', '-f', '-'], { input: script });
    });

    it('fences each bridge by the name podman gives it, whatever the backend', () => {
      for (const iface of ['podman3', 'cni-podman1']) {
        assert.ok(script.includes(`iifname "${iface}" ip daddr 169.254.0.0/16 meta l4proto tcp reject with tcp reset`), `no metadata rule for ${iface}`);
        // New connections into the bridge from anywhere else (other agents, the LAN) are refused; the host's own are not forwarded.
        assert.ok(script.includes(`iifname != "${iface}" oifname "${iface}" ct state new meta l4proto tcp reject with tcp reset`), `no inbound rule for ${iface}`);
        assert.ok(script.includes(`iifname "${iface}" ip daddr 10.20.30.40 tcp dport 6379 reject with tcp reset`), `no remote-endpoint rule for ${iface}`);
      }
      assert.ok(!script.includes('podman+'), 'a wildcard bridge name');
    });

    it('lets agents reach the host only for answers, DNS to their gateway and the open ports, and refuses the rest', () => {
      for (const { iface, gateway } of networks) {
        assert.deepEqual(inputRules(iface), [
          `iifname "${iface}" ct state established,related accept`,
          `iifname "${iface}" ip daddr ${gateway} meta l4proto { tcp, udp } th dport 53 accept`,
          `iifname "${iface}" tcp dport { 11434 } accept`,
          `iifname "${iface}" meta l4proto tcp reject with tcp reset`,
          `iifname "${iface}" reject with icmpx admin-prohibited`,
        ]);
      }
    });

    it('hooks before podman\'s own rules, so their ACCEPTs cannot come first', () => {
      assert.match(script, /type filter hook forward priority filter - 5;/);
      assert.match(script, /type filter hook input priority filter - 5;/);
    });

    it('names its owner, and replaces the table whole', () => {
      assert.deepEqual(parseOwner(script), owner);
      const lines = script.split('\n');
      assert.equal(lines[0], `table inet ${tableName(owner.instance)}`);
      assert.equal(lines[1], `delete table inet ${tableName(owner.instance)}`);
      assert.deepEqual(parseOwner(`table inet x {\n\tcomment "${ownerComment(owner)}"\n}`), owner);
    });

    it('deletes the table when no network is left', () => {
      const empty = fenceScript({ table: tableName(owner.instance), owner, networks: [], endpoints, openHostPorts: [] });
      assert.equal(empty, `table inet ${tableName(owner.instance)}\ndelete table inet ${tableName(owner.instance)}\n`);
      execFileSync('nft', ['--check', '-f', '-'], { input: empty });
    });

    it('refuses a name that could break out of the rule', () => {
      assert.throws(() => fenceScript({ table: 't', owner, networks: [{ name: 'x', iface: 'podman1" accept #', gateway: null }], endpoints, openHostPorts: [] }), /refusing/);
      assert.throws(() => fenceScript({ table: 't', owner, networks: [{ name: 'x', iface: 'podman1', gateway: '10.0.0.1 accept' }], endpoints, openHostPorts: [] }), /refusing/);
    });
  });

  describe('the probe', () => {
    const targets = probeTargets({
      self: { host: '10.89.4.2', port: 8080 },
      gateway: '10.89.4.1',
      hostAddresses: ['192.0.2.2'],
      endpoints,
      otherNetwork: { host: '10.89.9.2', port: 8080 },
      unrelatedHostPort: 40123,
      agentServices: null,
    });

    it('connects to itself first, then to everything that must stay closed', () => {
      assert.deepEqual(targets[0], { label: 'the probe itself', host: '10.89.4.2', port: 8080, expect: 'open', unreachable: 'the probe could not connect to its own listener, so its other results mean nothing' });
      const closed = targets.slice(1).map((t) => `${t.label}@${t.host}:${t.port}`);
      assert.deepEqual(closed, [
        'the metadata service@169.254.169.254:80',
        'postgres@10.89.4.1:5432',
        'postgres@host.containers.internal:5432',
        'postgres@192.0.2.2:5432',
        'redis@10.20.30.40:6379',
        'an unrelated host service@10.89.4.1:40123',
        'an unrelated host service@host.containers.internal:40123',
        'an unrelated host service@192.0.2.2:40123',
        'another agent network@10.89.9.2:8080',
      ]);
      assert.ok(targets.slice(1).every((t) => t.expect === 'closed'));
    });

    const output = (results: string[]) => results.map((r, i) => `${i} ${r}`).join('\n') + '\ndone\n';
    const expected = (list: ProbeTarget[]) => list.map((t) => t.expect);

    it('finds nothing wrong when each connect did as expected, in any order', () => {
      const lines = expected(targets).map((r, i) => `${i} ${r}`).reverse();
      assert.deepEqual(probeProblems(targets, `${lines.join('\n')}\ndone\n`), []);
    });

    it('names every target that opened', () => {
      const results = expected(targets);
      results[1] = 'open';
      results[9] = 'open';
      assert.deepEqual(probeProblems(targets, output(results)), [
        'the metadata service at 169.254.169.254:80 is reachable',
        'another agent network at 10.89.9.2:8080 is reachable',
      ]);
    });

    it('fails when the probe cannot reach its own listener: its other results would mean nothing', () => {
      const results = expected(targets);
      results[0] = 'closed';
      assert.match(probeProblems(targets, output(results))[0]!, /could not connect to its own listener/);
    });

    it('connects to the agent services on the gateway, which must open, and says what it means when they do not', () => {
      const withServices = probeTargets({
        self: { host: '10.89.4.2', port: 8080 }, gateway: '10.89.4.1', hostAddresses: [], endpoints: [], otherNetwork: null, unrelatedHostPort: null,
        agentServices: { host: '10.89.4.1', port: 7090 },
      });
      assert.deepEqual(withServices.map((t) => `${t.label}@${t.host}:${t.port} ${t.expect}`), [
        'the probe itself@10.89.4.2:8080 open',
        'the metadata service@169.254.169.254:80 closed',
        'the agent services@10.89.4.1:7090 open',
      ]);
      assert.deepEqual(probeProblems(withServices, output(['open', 'closed', 'open'])), []);
      assert.deepEqual(probeProblems(withServices, output(['open', 'closed', 'closed'])), [
        "the agent services at 10.89.4.1:7090 cannot be reached: replicas could not reach the agent services, so they could not keep conversations; the agent networks' firewall must let AGENT_SERVICES_PORT through",
      ]);
    });

    it('fails closed on output cut short', () => {
      assert.match(probeProblems(targets, '0 open\n1 closed\n')[0]!, /did not report on every connect/);
      assert.match(probeProblems(targets, '')[0]!, /did not report/);
    });

    it('leaves out another network when probing the canary\'s own', () => {
      const own = probeTargets({ self: { host: '10.1.0.2', port: 8080 }, gateway: null, hostAddresses: [], endpoints: [], otherNetwork: null, unrelatedHostPort: null, agentServices: null });
      assert.deepEqual(own.map((t) => t.label), ['the probe itself', 'the metadata service']);
    });
  });

  describe('protected endpoints', () => {
    it('come from the platform\'s own settings, with default ports, plus PODMAN_PROTECTED_ENDPOINTS', () => {
      const list = platformEndpoints(
        { databaseUrl: 'postgres://u:p@127.0.0.1/platform', redisUrl: 'redis://cache.internal:7379', controlHost: '127.0.0.1', controlPort: 7070 },
        parseEndpointList('127.0.0.1:7091, [::1]:7080'),
      );
      assert.deepEqual(list.map((e) => `${e.name}=${e.host}:${e.port}`), [
        'postgres=127.0.0.1:5432',
        'redis=cache.internal:7379',
        'control API=127.0.0.1:7070',
        '127.0.0.1:7091=127.0.0.1:7091',
        '[::1]:7080=::1:7080',
      ]);
    });

    it('refuses a malformed PODMAN_PROTECTED_ENDPOINTS item', () => {
      assert.throws(() => parseEndpointList('localhost'), /PODMAN_PROTECTED_ENDPOINTS/);
      assert.throws(() => parseEndpointList('db:99999'), /PODMAN_PROTECTED_ENDPOINTS/);
      assert.throws(() => readSettings({ PODMAN_PROTECTED_ENDPOINTS: 'nope' }, readPodmanSettings), /PODMAN_PROTECTED_ENDPOINTS/);
    });

    it('tell the host\'s own services from other machines\'', async () => {
      const resolved = await resolveEndpoints(
        [
          { name: 'loopback', host: '127.0.0.1', port: 1 },
          { name: 'any', host: '0.0.0.0', port: 2 },
          { name: 'lan address of this host', host: '192.0.2.2', port: 3 },
          { name: 'managed db', host: '10.20.30.40', port: 4 },
        ],
        new Set(['192.0.2.2']),
      );
      assert.deepEqual(resolved.map((e) => [e.name, e.onHost, e.remoteAddresses]), [
        ['loopback', true, []],
        ['any', true, []],
        ['lan address of this host', true, []],
        ['managed db', false, ['10.20.30.40']],
      ]);
    });
  });

  it('runs a replica with no port published on the host', () => {
    const spec: JobSpec = {
      agentId: 'agt_x', slug: 'x', name: 'x', accountId: 'acc', url: 'http://x', version: 1, image: 'img', port: 8080, count: 1,
      cpu: 0.5, memoryMb: 256, env: {}, secretEnv: {}, check: 'http', scaling: { enabled: false, min: 1, max: 1 },
    };
    const args = runArguments({ replicaId: 'agt_x-1', spec, envFile: '/tmp/env' }, detectHost(readSettings({}, readPodmanSettings)));
    assert.ok(!args.some((arg) => arg === '--publish' || arg === '-p' || arg.startsWith('--publish=')), `published: ${args.join(' ')}`);
    assert.deepEqual(args.slice(args.indexOf('--network'), args.indexOf('--network') + 2), ['--network', 'agent-agt_x']);
  });
});
