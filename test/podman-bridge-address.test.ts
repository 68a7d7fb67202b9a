import { strict as assert } from 'node:assert';
import { readdirSync, readFileSync } from 'node:fs';
import { interfaceOnSubnetOf, pinBridgeAddress } from '../control/orchestrator/podman/bridge-address.js';
import { ipRunner } from '../control/orchestrator/podman/pool-route.js';
import { podman } from './support/podman.js';
import { ensureTestImage, TEST_IMAGE } from './support/test-image.js';

/**
 * Why the podman driver pins each agent bridge's MAC address (bridge-address.ts), on this
 * host's own kernel and podman: two replicas on one network, each answering the host, and
 * the one whose port lent the bridge its address removed, as a redeploy removes an old
 * replica. Unpinned, the bridge takes another address, under the ARP entries its replicas
 * hold; pinned, it keeps its address and the other replica goes on answering.
 */

const NETWORK = 'platform-test-bridge-address';
const SUBNET = '10.89.253.0/24';
const PATH_ENV = { PATH: process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin' };
const sysfs = (bridge: string, file: string) => readFileSync(`/sys/class/net/${bridge}/${file}`, 'utf8').trim();

function removeNetwork(): void {
  for (const name of podman(['ps', '--all', '--filter', `network=${NETWORK}`, '--format', '{{.Names}}']).split('\n').filter(Boolean)) {
    podman(['rm', '--force', '--time', '0', name]);
  }
  try {
    podman(['network', 'rm', '--force', NETWORK]);
  } catch {
    // none
  }
}

/** The ports (host ends of the veth pairs) of a bridge; none before netavark creates it with the first container. */
function portsOf(bridge: string): string[] {
  try {
    return readdirSync(`/sys/class/net/${bridge}/brif`);
  } catch {
    return [];
  }
}

/** A listener of the tests' image on the network: its name, address and the MAC of its port on the bridge. */
function startReplica(bridge: string): { name: string; address: string; portMac: string } {
  const ports = new Set(portsOf(bridge));
  const name = podman(['run', '--detach', '--network', NETWORK, '--ulimit', 'nofile=1024:1024', '--ulimit', 'nproc=256:256', TEST_IMAGE]).trim();
  const address = podman(['inspect', name, '--format', '{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}']).trim();
  const added = portsOf(bridge).filter((port) => !ports.has(port));
  assert.equal(added.length, 1, `one new port on ${bridge}`);
  return { name, address, portMac: sysfs(added[0]!, 'address') };
}

/** Whether the replica answers /health within `timeoutMs`: its answer must come back through the bridge. */
async function answers(address: string, timeoutMs = 3_000): Promise<boolean> {
  try {
    const response = await fetch(`http://${address}:8080/health`, { signal: AbortSignal.timeout(timeoutMs) });
    await response.text();
    return response.status === 200;
  } catch {
    return false;
  }
}

async function waitUntilAnswering(address: string): Promise<void> {
  for (let tries = 0; tries < 50; tries += 1) {
    if (await answers(address, 500)) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`${address} never answered`);
}

describe('podman driver: an agent bridge keeps its MAC address when a replica goes', function () {
  this.timeout(120_000);
  before(() => {
    ensureTestImage('runc');
    removeNetwork();
  });
  afterEach(removeNetwork);

  /** Two replicas answering the host, then the one whose port the bridge's address came from removed; whether the other still answers. */
  async function removeTheAddressLender(pin: boolean): Promise<{ before: string; after: string; survivorAnswers: boolean; assignType: string }> {
    podman(['network', 'create', '--subnet', SUBNET, NETWORK]);
    const bridge = JSON.parse(podman(['network', 'inspect', NETWORK]))[0].network_interface as string;
    const replicas = [startReplica(bridge), startReplica(bridge)];
    // As the driver finds it from a replica's address (agent-networks.ts, pinBridgeOf).
    assert.equal(interfaceOnSubnetOf(replicas[0]!.address), bridge);
    if (pin) assert.equal(await pinBridgeAddress(bridge, ipRunner(PATH_ENV)), true);
    const before = sysfs(bridge, 'address');
    // The kernel gives an unset bridge its lowest port's address; one set (by netavark or by the pin) lends nothing, and any replica goes.
    const lender = replicas.find((replica) => replica.portMac === before) ?? (sysfs(bridge, 'addr_assign_type') === '3' ? replicas[0] : undefined);
    assert.ok(lender, `the bridge has the address of one of its ports (${before})`);
    const survivor = replicas.find((replica) => replica !== lender)!;
    // Both answer: each learned the gateway's address (the bridge's) in doing so.
    for (const replica of replicas) await waitUntilAnswering(replica.address);
    podman(['rm', '--force', '--time', '0', lender.name]);
    return { before, after: sysfs(bridge, 'address'), survivorAnswers: await answers(survivor.address), assignType: sysfs(bridge, 'addr_assign_type') };
  }

  it("unpinned, the bridge takes another address when the port it had it from goes, unless its address was set (the kernel's rule)", async () => {
    const seen = await removeTheAddressLender(false);
    // netavark 1.4 (Debian bookworm's) never sets it: NET_ADDR_RANDOM. Later versions set it
    // themselves (containers/netavark pull 833), and then the driver's pin changes nothing.
    if (seen.assignType === '3') assert.equal(seen.after, seen.before, 'a set address is kept');
    else assert.notEqual(seen.after, seen.before, 'the bridge took another address');
  });

  it('pinned, the bridge keeps its address and the other replica goes on answering', async () => {
    const seen = await removeTheAddressLender(true);
    assert.equal(seen.assignType, '3', 'NET_ADDR_SET');
    assert.equal(seen.after, seen.before);
    assert.equal(seen.survivorAnswers, true);
  });

  it('leaves a bridge already pinned as it is, and refuses what is not a bridge of this host', async () => {
    podman(['network', 'create', '--subnet', SUBNET, NETWORK]);
    const bridge = JSON.parse(podman(['network', 'inspect', NETWORK]))[0].network_interface as string;
    const ip = ipRunner(PATH_ENV);
    await assert.rejects(pinBridgeAddress(bridge, ip), /not a bridge on this host/, 'netavark creates the bridge with the first container');
    startReplica(bridge);
    assert.equal(await pinBridgeAddress(bridge, ip), true);
    assert.equal(await pinBridgeAddress(bridge, ip), false);
    await assert.rejects(pinBridgeAddress('lo', ip), /not a bridge/);
    await assert.rejects(pinBridgeAddress('../../etc', ip), /not an interface name/);
  });

  it("finds a container's bridge by the subnet of its address, and nothing for an address no interface is on", () => {
    const interfaces = {
      lo: [{ address: '127.0.0.1', netmask: '255.0.0.0', family: 'IPv4', internal: true, mac: '00:00:00:00:00:00', cidr: '127.0.0.1/8' }],
      eth0: [{ address: '192.168.1.20', netmask: '255.255.255.0', family: 'IPv4', internal: false, mac: '02:00:00:00:00:01', cidr: '192.168.1.20/24' }],
      podman3: [{ address: '10.89.3.1', netmask: '255.255.255.0', family: 'IPv4', internal: false, mac: '02:00:00:00:00:02', cidr: '10.89.3.1/24' }],
    } as NodeJS.Dict<import('node:os').NetworkInterfaceInfo[]>;
    assert.equal(interfaceOnSubnetOf('10.89.3.7', interfaces), 'podman3');
    assert.equal(interfaceOnSubnetOf('10.89.4.7', interfaces), null);
    assert.equal(interfaceOnSubnetOf('10.89.3.1', interfaces), null, "the bridge's own address is no container's");
    assert.equal(interfaceOnSubnetOf('not an address', interfaces), null);
  });
});
