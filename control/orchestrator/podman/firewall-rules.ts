import { createHash } from 'node:crypto';
import type { ResolvedEndpoint } from './protected-endpoints.js';

/** An agent network's bridge as podman names it (`network inspect` → network_interface). */
export interface FencedNetwork {
  name: string;
  iface: string;
}

export interface Fence {
  /** One nftables table per installation (PODMAN_INSTANCE), replaced whole on every change. */
  table: string;
  /** Says whose table it is, so a later start can tell a stale one (its installation has no network left). */
  owner: TableOwner;
  networks: FencedNetwork[];
  endpoints: ResolvedEndpoint[];
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
 * - input: no new connection to a platform port on any of the host's addresses
 *   (the gateway, host.containers.internal). Other host ports stay open: in tests the
 *   fake LLM provider listens there, standing in for the internet.
 */
export function fenceScript(fence: Fence): string {
  const { table } = fence;
  if (fence.networks.length === 0) return deleteTableScript(table);
  const forward: string[] = [];
  const input: string[] = [];
  const hostPorts = [...new Set(fence.endpoints.filter((e) => e.onHost).map((e) => e.port))].sort((a, b) => a - b);
  for (const { iface } of fence.networks) {
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
    if (hostPorts.length > 0) input.push(`${from} tcp dport { ${hostPorts.join(', ')} } ct state new reject with tcp reset`);
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

export const deleteTableScript = (table: string) => `table inet ${table}\ndelete table inet ${table}\n`;
