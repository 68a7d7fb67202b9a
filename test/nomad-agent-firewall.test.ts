import assert from 'node:assert/strict';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

/**
 * nomad-jobs/agent-client-firewall.sh on a Nomad client built from network namespaces
 * (root and iptables needed, as on a real client):
 *
 *   agent ns 172.30.9.2 ──veth── node ns (the Nomad client: forwards, runs the rules, serves
 *                                 │        its "Nomad API" on :4646 and something on :7090)
 *                                 ├─veth── platform ns 10.77.2.2 (Postgres :5432, the agent
 *                                 │        services :7090) and
 *                                 │        169.254.169.254 (the metadata service :80)
 *                                 └─veth── outside ns 198.51.100.2 (the internet, :443)
 *
 * The script runs inside the node namespace only, so the machine's own rules are untouched.
 */

const run = promisify(execFile);
const SCRIPT = fileURLToPath(new URL('../nomad-jobs/agent-client-firewall.sh', import.meta.url));

const suffix = randomBytes(2).toString('hex');
const ns = { node: `fw${suffix}-node`, agent: `fw${suffix}-agent`, platform: `fw${suffix}-plat`, outside: `fw${suffix}-net` };
/** The node's end of the agent veth plays the docker bridge. */
const AGENT_BRIDGE = `ag${suffix}`;

const POSTGRES = { host: '10.77.2.2', port: 5432 };
const METADATA = { host: '169.254.169.254', port: 80 };
/** The control API's agent services listener (NOMAD_AGENT_SERVICES_URL), on a platform host. */
const AGENT_SERVICES = { host: '10.77.2.2', port: 7090 };
const NOMAD_API_ON_NODE = { host: '172.30.9.1', port: 4646 };
/** The agent services' port, on the node itself: the address differs. */
const SERVICES_PORT_ON_NODE = { host: '172.30.9.1', port: AGENT_SERVICES.port };
const INTERNET = { host: '198.51.100.2', port: 443 };
const AGENT_REPLICA = { host: '172.30.9.2', port: 8080 };

type Target = { host: string; port: number };

const inNs = (name: string, command: string, args: string[], env: Record<string, string> = {}) =>
  run('ip', ['netns', 'exec', name, command, ...args], { env: { ...process.env, ...env } });

/** A TCP server per target that greets and closes; resolves once all listen. */
function serve(name: string, targets: Target[]): Promise<ChildProcess> {
  const code = `
    const net = require('node:net');
    const targets = ${JSON.stringify(targets)};
    let listening = 0;
    for (const t of targets) net.createServer((s) => s.end('hello')).listen(t.port, t.host, () => {
      if (++listening === targets.length) console.log('ready');
    });`;
  const child = spawn('ip', ['netns', 'exec', name, process.execPath, '-e', code], { stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    child.stdout!.once('data', () => resolve(child));
    child.once('exit', (status) => reject(new Error(`server in ${name} exited (${status})`)));
  });
}

/** From namespace `from`, connect to `target`: `connected` (greeting read), `refused` or `timeout`. */
async function probe(from: string, target: Target): Promise<string> {
  const code = `
    const net = require('node:net');
    const s = net.connect(${target.port}, ${JSON.stringify(target.host)});
    const done = (r) => { console.log(r); process.exit(0); };
    s.setTimeout(3000, () => done('timeout'));
    s.on('data', () => done('connected'));
    s.on('error', (e) => done(e.code === 'ECONNREFUSED' || e.code === 'ECONNRESET' || e.code === 'EHOSTUNREACH' ? 'refused' : e.code));`;
  const { stdout } = await inNs(from, process.execPath, ['-e', code]);
  return stdout.trim();
}

const applyFirewall = (env: Record<string, string> = {}) => inNs(ns.node, 'bash', [SCRIPT], { AGENT_BRIDGES: AGENT_BRIDGE, ...env });
const clearFirewall = async () => {
  await inNs(ns.node, 'iptables', ['-F']);
  await inNs(ns.node, 'iptables', ['-X']);
};
/** The node's rules without counters and timestamps, to compare two runs. */
const rules = async () => (await inNs(ns.node, 'iptables', ['-S'])).stdout;

async function link(from: string, fromIf: string, fromAddr: string, to: string, toIf: string, toAddr: string) {
  await run('ip', ['link', 'add', fromIf, 'netns', from, 'type', 'veth', 'peer', 'name', toIf, 'netns', to]);
  await inNs(from, 'ip', ['addr', 'add', fromAddr, 'dev', fromIf]);
  await inNs(to, 'ip', ['addr', 'add', toAddr, 'dev', toIf]);
  await inNs(from, 'ip', ['link', 'set', fromIf, 'up']);
  await inNs(to, 'ip', ['link', 'set', toIf, 'up']);
}

describe('nomad-jobs/agent-client-firewall.sh', function () {
  const servers: ChildProcess[] = [];

  before(async function () {
    for (const name of Object.values(ns)) {
      await run('ip', ['netns', 'add', name]);
      await inNs(name, 'ip', ['link', 'set', 'lo', 'up']);
    }
    await inNs(ns.node, 'sysctl', ['-q', '-w', 'net.ipv4.ip_forward=1']);
    await link(ns.node, AGENT_BRIDGE, '172.30.9.1/24', ns.agent, 'eth0', '172.30.9.2/24');
    await link(ns.node, `pl${suffix}`, '10.77.2.1/24', ns.platform, 'eth0', '10.77.2.2/24');
    await link(ns.node, `ou${suffix}`, '198.51.100.1/24', ns.outside, 'eth0', '198.51.100.2/24');
    await inNs(ns.platform, 'ip', ['addr', 'add', '169.254.169.254/32', 'dev', 'lo']);
    await inNs(ns.node, 'ip', ['route', 'add', '169.254.169.254/32', 'via', '10.77.2.2']);
    await inNs(ns.agent, 'ip', ['route', 'add', 'default', 'via', '172.30.9.1']);
    await inNs(ns.platform, 'ip', ['route', 'add', 'default', 'via', '10.77.2.1']);
    await inNs(ns.outside, 'ip', ['route', 'add', 'default', 'via', '198.51.100.1']);

    servers.push(await serve(ns.platform, [POSTGRES, METADATA, AGENT_SERVICES]));
    servers.push(await serve(ns.node, [{ host: '0.0.0.0', port: NOMAD_API_ON_NODE.port }, { host: '0.0.0.0', port: SERVICES_PORT_ON_NODE.port }]));
    servers.push(await serve(ns.outside, [INTERNET]));
    servers.push(await serve(ns.agent, [{ host: '0.0.0.0', port: AGENT_REPLICA.port }]));
  });

  after(async function () {
    for (const server of servers) server.kill();
    for (const name of Object.values(ns)) await run('ip', ['netns', 'del', name]).catch(() => undefined);
  });

  beforeEach(clearFirewall);

  it('without the rules, an agent reaches Postgres, the metadata service, the node\'s Nomad API and the internet', async function () {
    for (const target of [POSTGRES, METADATA, AGENT_SERVICES, NOMAD_API_ON_NODE, SERVICES_PORT_ON_NODE, INTERNET]) {
      assert.equal(await probe(ns.agent, target), 'connected', `${target.host}:${target.port} (the test network itself must work)`);
    }
  });

  it('with the rules, an agent reaches the internet but not Postgres, the metadata service or the node', async function () {
    await applyFirewall();
    assert.equal(await probe(ns.agent, INTERNET), 'connected');
    assert.equal(await probe(ns.agent, POSTGRES), 'refused');
    assert.equal(await probe(ns.agent, METADATA), 'refused');
    assert.equal(await probe(ns.agent, NOMAD_API_ON_NODE), 'refused');
  });

  it('lets agents reach the agent services (AGENT_SERVICES_ADDRESS) at that address and port, and nothing else of that host or port', async function () {
    await applyFirewall({ AGENT_SERVICES_ADDRESS: `${AGENT_SERVICES.host}:${AGENT_SERVICES.port}` });
    assert.equal(await probe(ns.agent, AGENT_SERVICES), 'connected');
    assert.equal(await probe(ns.agent, POSTGRES), 'refused', 'another port of the same host');
    assert.equal(await probe(ns.agent, SERVICES_PORT_ON_NODE), 'refused', 'the same port on the node itself');
    assert.equal(await probe(ns.agent, NOMAD_API_ON_NODE), 'refused');
    assert.equal(await probe(ns.agent, METADATA), 'refused');
    assert.equal(await probe(ns.agent, INTERNET), 'connected');
    // Without it, the agent services are a private address like any other.
    await applyFirewall();
    assert.equal(await probe(ns.agent, AGENT_SERVICES), 'refused');
  });

  it('refuses an AGENT_SERVICES_ADDRESS that is not IPv4:port, and changes nothing', async function () {
    for (const bad of ['10.77.2.2', '10.77.2.2:0', '10.77.2.2:65536', 'control.internal:7090', '10.77.2.0/24:7090']) {
      await assert.rejects(applyFirewall({ AGENT_SERVICES_ADDRESS: bad }), (error: { code: number; stderr: string }) => {
        assert.equal(error.code, 64, bad);
        assert.match(error.stderr, /AGENT_SERVICES_ADDRESS .* is not IPv4:port/);
        return true;
      });
    }
    assert.equal(await probe(ns.agent, POSTGRES), 'connected');
  });

  it('still lets the edge (on a private network) call the agent\'s replica', async function () {
    await applyFirewall();
    assert.equal(await probe(ns.platform, AGENT_REPLICA), 'connected');
  });

  it('is idempotent: a second run leaves exactly the same rules', async function () {
    await applyFirewall();
    const first = await rules();
    await applyFirewall();
    assert.equal(await rules(), first);
    assert.equal(first.split('\n').filter((line) => line.includes(`-i ${AGENT_BRIDGE}`)).length, 2, 'one FORWARD and one INPUT jump');
  });

  it('takes exceptions (AGENT_FIREWALL_ALLOW) and more platform addresses (AGENT_FIREWALL_DENY), and a rerun replaces them', async function () {
    await applyFirewall({ AGENT_FIREWALL_ALLOW: `${POSTGRES.host}/32`, AGENT_FIREWALL_DENY: `${INTERNET.host}/32` });
    assert.equal(await probe(ns.agent, POSTGRES), 'connected');
    assert.equal(await probe(ns.agent, INTERNET), 'refused');
    assert.equal(await probe(ns.agent, METADATA), 'refused');
    await applyFirewall();
    assert.equal(await probe(ns.agent, POSTGRES), 'refused');
    assert.equal(await probe(ns.agent, INTERNET), 'connected');
  });

  it('holds under Docker: hooked into DOCKER-USER, it still refuses when Docker\'s ACCEPT rules come first', async function () {
    await inNs(ns.node, 'iptables', ['-N', 'DOCKER-USER']);
    await inNs(ns.node, 'iptables', ['-A', 'FORWARD', '-j', 'DOCKER-USER']);
    await applyFirewall();
    // What Docker does when it (re)starts: its jump first, then accept all from the bridge.
    await inNs(ns.node, 'iptables', ['-I', 'FORWARD', '2', '-i', AGENT_BRIDGE, '!', '-o', AGENT_BRIDGE, '-j', 'ACCEPT']);
    await inNs(ns.node, 'iptables', ['-I', 'FORWARD', '1', '-j', 'DOCKER-USER']);
    assert.match(await rules(), new RegExp(`-A DOCKER-USER -i ${AGENT_BRIDGE} -j AGENT-EGRESS`));
    assert.equal(await probe(ns.agent, POSTGRES), 'refused');
    assert.equal(await probe(ns.agent, METADATA), 'refused');
    assert.equal(await probe(ns.agent, INTERNET), 'connected');
  });

  it('holds under Nomad\'s CNI bridge: hooked into NOMAD-ADMIN, checked before CNI-FORWARD accepts', async function () {
    await inNs(ns.node, 'iptables', ['-N', 'NOMAD-ADMIN']);
    await applyFirewall();
    // What the CNI firewall plugin sets up: CNI-FORWARD first in FORWARD, the admin chain
    // first in CNI-FORWARD, then an ACCEPT for the allocation's traffic.
    await inNs(ns.node, 'iptables', ['-N', 'CNI-FORWARD']);
    await inNs(ns.node, 'iptables', ['-A', 'CNI-FORWARD', '-j', 'NOMAD-ADMIN']);
    await inNs(ns.node, 'iptables', ['-A', 'CNI-FORWARD', '-s', AGENT_REPLICA.host, '-j', 'ACCEPT']);
    await inNs(ns.node, 'iptables', ['-I', 'FORWARD', '1', '-j', 'CNI-FORWARD']);
    assert.equal(await probe(ns.agent, POSTGRES), 'refused');
    assert.equal(await probe(ns.agent, METADATA), 'refused');
    assert.equal(await probe(ns.agent, INTERNET), 'connected');
  });

  it('refuses a malformed address with a clear message and changes nothing', async function () {
    await assert.rejects(applyFirewall({ AGENT_FIREWALL_DENY: 'db.internal' }), (error: { code: number; stderr: string }) => {
      assert.equal(error.code, 64);
      assert.match(error.stderr, /"db\.internal" is not an IPv4 address or CIDR/);
      return true;
    });
    assert.equal(await probe(ns.agent, POSTGRES), 'connected');
  });
});
