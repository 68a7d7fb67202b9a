import { createHash } from 'node:crypto';
import type { ResolvedEndpoint } from './protected-endpoints.js';

/** An agent network's bridge as podman names it (`network inspect` → network_interface). */
export interface FencedNetwork {
  name: string;
  iface: string;
  /** The bridge's address on the network: where aardvark-dns answers the network's containers. */
  gateway: string | null;
}

export interface Fence {
  /** One nftables table per installation (PODMAN_INSTANCE), replaced whole on every change. */
  table: string;
  /** Says whose table it is, so a later start can tell a stale one (its installation has no network left). */
  owner: TableOwner;
  networks: FencedNetwork[];
  endpoints: ResolvedEndpoint[];
  /** Host TCP ports agents may open (PODMAN_AGENT_HOST_PORTS); a platform port among them stays refused. */
  openHostPorts: number[];
}

export interface TableOwner {
  instance: string;
  backend: string;
}

const TABLE_PREFIX = 'agent_platform_';

/** nft identifiers allow fewer characters than PODMAN_INSTANCE: the name is a hash, the owner sits in the comment. */
export const tableName = (instance: string) => TABLE_PREFIX + createHash('sha256').update(instance).digest('hex').slice(0, 16);

export const isPlatformTable = (name: string) => name.startsWith(TABLE_PREFIX);

export const ownerComment = (owner: TableOwner) => `agent-platform instance=${owner.instance} backend=${owner.backend}`;

export function parseOwner(tableListing: string): TableOwner | null {
  const match = /comment "agent-platform instance=(\S+) backend=(\S+)"/.exec(tableListing);
  return match ? { instance: match[1]!, backend: match[2]! } : null;
}

const quoted = (name: string) => {
  // Interface and instance names come from podman and from a validated setting; refuse anything that could break out of the string.
  if (!/^[A-Za-z0-9_.=\- ]+$/.test(name)) throw new Error(`refusing to put "${name}" into an nftables rule`);
  return `"${name}"`;
};

/**
 * The nft script that makes the installation's table exactly `fence`, in one atomic
 * transaction (the `table` line creates it when missing, so `delete` never fails).
 *
 * Its own table, hooked at priority filter - 5, runs before podman's rules (netavark's
 * NETAVARK_FORWARD, CNI's CNI-FORWARD) whatever order they insert theirs in, and a
 * reject there is final: their later ACCEPT cannot undo it. iptables rules of ours at
 * the top of FORWARD were not: CNI inserts its jump above them when a container starts.
 *
 * For each agent bridge:
 * - forward: nothing to 169.254.0.0/16 (the metadata service), nothing to a remote
 *   platform endpoint, and no new connection forwarded INTO the bridge from anywhere
 *   but itself (other agents, other containers, the LAN); the host's own connections
 *   to replicas (the edge, health checks) are not forwarded, so they pass;
 * - input, default deny (issue 31, finding 2), as the Nomad client firewall does
 *   (nomad-jobs/agent-client-firewall.sh): only answers to the host's own connections
 *   (the edge's, health checks'), DNS to aardvark on the network's gateway, and the
 *   ports of PODMAN_AGENT_HOST_PORTS pass. Any other service on the host (sshd, a
 *   database, a dev server on 0.0.0.0) is out of agents' reach, and a platform port
 *   stays refused even when named there.
 */
export function fenceScript(fence: Fence): string {
  const { table } = fence;
  if (fence.networks.length === 0) return deleteTableScript(table);
  const forward: string[] = [];
  const input: string[] = [];
  const platformPorts = new Set(fence.endpoints.filter((e) => e.onHost).map((e) => e.port));
  const openPorts = fence.openHostPorts.filter((port) => !platformPorts.has(port));
  for (const { iface, gateway } of fence.networks) {
    const from = `iifname ${quoted(iface)}`;
    forward.push(
      `${from} ip daddr 169.254.0.0/16 meta l4proto tcp reject with tcp reset`,
      `${from} ip daddr 169.254.0.0/16 reject with icmpx admin-prohibited`,
    );
    for (const endpoint of fence.endpoints) {
      for (const address of endpoint.remoteAddresses) forward.push(`${from} ip daddr ${address} tcp dport ${endpoint.port} reject with tcp reset`);
    }
    forward.push(
      `iifname != ${quoted(iface)} oifname ${quoted(iface)} ct state new meta l4proto tcp reject with tcp reset`,
      `iifname != ${quoted(iface)} oifname ${quoted(iface)} ct state new reject with icmpx admin-prohibited`,
    );
    input.push(`${from} ct state established,related accept`);
    if (gateway) input.push(`${from} ip daddr ${ipv4(gateway)} meta l4proto { tcp, udp } th dport 53 accept`);
    if (openPorts.length > 0) input.push(`${from} tcp dport { ${openPorts.join(', ')} } accept`);
    input.push(`${from} meta l4proto tcp reject with tcp reset`, `${from} reject with icmpx admin-prohibited`);
  }
  return [
    `table inet ${table}`,
    `delete table inet ${table}`,
    `table inet ${table} {`,
    `  comment ${quoted(ownerComment(fence.owner))}`,
    '  chain forward {',
    '    type filter hook forward priority filter - 5; policy accept;',
    ...forward.map((rule) => `    ${rule}`),
    '  }',
    '  chain input {',
    '    type filter hook input priority filter - 5; policy accept;',
    ...input.map((rule) => `    ${rule}`),
    '  }',
    '}',
    '',
  ].join('\n');
}

const ipv4 = (address: string) => {
  if (!/^\d{1,3}(\.\d{1,3}){3}$/.test(address)) throw new Error(`refusing to put "${address}" into an nftables rule`);
  return address;
};

export const deleteTableScript = (table: string) => `table inet ${table}\ndelete table inet ${table}\n`;
