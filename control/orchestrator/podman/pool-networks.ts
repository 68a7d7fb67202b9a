import { networkInterfaces, type NetworkInterfaceInfo } from 'node:os';
import { freeSubnet, type SubnetPool } from '../../../contract/agent-subnet-pool.js';
import { PodmanError, type PodmanCli } from './cli.js';

/**
 * Every subnet taken on this host: podman's networks, whoever made them (other
 * installations, the host's own users), and the host's own interfaces (a LAN or VPN inside
 * the pool), which podman refuses too. Without the latter, every create would pick the
 * same refused /24 again, and the route's check could aim at a LAN address.
 */
export async function usedSubnets(cli: PodmanCli): Promise<string[]> {
  const networks = await cli.json<{ subnets?: { subnet: string }[] }[]>(['network', 'ls', '--format', 'json']);
  return [...networks.flatMap((n) => (n.subnets ?? []).map((s) => s.subnet)), ...interfaceSubnets(networkInterfaces())];
}

/** The IPv4 subnets of the host's interfaces, as `a.b.c.d/n`. Pure. */
export const interfaceSubnets = (interfaces: NodeJS.Dict<NetworkInterfaceInfo[]>): string[] =>
  Object.values(interfaces).flatMap((list) => list ?? []).filter((a) => a.family === 'IPv4' && a.cidr !== null).map((a) => a.cidr!);

/** Whether IPv4 `address` lies in `cidr` (`a.b.c.d/n`); false for IPv6 on either side. Pure. */
export function inSubnet(address: string, cidr: string): boolean {
  const [base, bits] = cidr.split('/');
  const toInt = (ip: string) => ip.split('.').reduce((n, octet) => (n << 8) + Number(octet), 0) >>> 0;
  if (!base || bits === undefined || base.includes(':') || address.includes(':')) return false;
  const mask = Number(bits) === 0 ? 0 : (~0 << (32 - Number(bits))) >>> 0;
  return (toInt(address) & mask) === (toInt(base) & mask);
}

/** How many times a create is tried again when another process took the chosen /24 in between. */
const ATTEMPTS = 5;

/**
 * Creates an agent-like network (isolated bridge) on the first free /24 of the pool, so
 * its addresses fall under the pool's unreachable route (pool-route.ts) once its bridge
 * goes. podman refuses a subnet another network or a host interface already holds
 * (containers/common libnetwork/internal/util/validate.go, `ValidateSubnets`): another
 * control API or the host's own podman user may create one between the listing and the
 * create, so a refusal is tried again with a fresh listing.
 */
export async function createPoolNetwork(cli: PodmanCli, pool: SubnetPool, name: string, labels: Record<string, string>): Promise<void> {
  let lastError: unknown = null;
  for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
    const subnet = freeSubnet(pool, await usedSubnets(cli));
    if (subnet === null) throw new Error(`the agent subnet pool ${pool.cidr} has no free /24 left: raise PODMAN_AGENT_SUBNETS to a larger range`);
    const labelArgs = Object.entries(labels).flatMap(([key, value]) => ['--label', `${key}=${value}`]);
    try {
      await cli.run(['network', 'create', '--opt', 'isolate=true', '--subnet', subnet, ...labelArgs, name]);
      return;
    } catch (error) {
      lastError = error;
      if (!(error instanceof PodmanError) || !/already (used|exists)|in use/i.test(error.stderr)) throw error;
      // The name itself taken by a concurrent create of the same network: that network will do.
      if (await cli.run(['network', 'exists', name]).then(() => true, () => false)) return;
    }
  }
  throw lastError;
}

/** Whether every subnet of the network lies inside the pool (a network made before the pool existed may not). */
export const insidePool = (pool: SubnetPool, subnets: { subnet: string }[] | undefined) =>
  (subnets ?? []).length > 0 && (subnets ?? []).every(({ subnet }) => {
    const [address, bits] = subnet.split('/');
    return pool.contains(address ?? '') && Number(bits) >= Number(pool.cidr.split('/')[1]);
  });
