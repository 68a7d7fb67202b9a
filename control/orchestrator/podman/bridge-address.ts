import { access, readFile } from 'node:fs/promises';
import { networkInterfaces, type NetworkInterfaceInfo } from 'node:os';
import { inSubnet } from './pool-networks.js';
import type { IpRunner } from './pool-route.js';

/** include/uapi/linux/netdevice.h, `NET_ADDR_SET`: the address was set by hand, and the bridge keeps it. */
const NET_ADDR_SET = '3';
/** A Linux interface name (IFNAMSIZ, 15 characters), nothing that could step out of /sys/class/net. */
const INTERFACE_NAME = /^[A-Za-z0-9_.-]{1,15}$/;

/**
 * Pins an agent bridge's MAC address to the one it has now, so that it never changes again.
 *
 * A Linux bridge whose address was never set takes the lowest MAC address of its ports, and
 * takes another when that port goes (net/bridge/br_stp_if.c, `br_stp_recalculate_bridge_id`,
 * which returns early only for an address assigned by hand). A redeploy removes the old
 * replicas' ports while the new replicas serve: when the bridge's address was an old port's,
 * every new replica kept sending to the gateway's old address, and its answers to the edge
 * and to health checks went nowhere until its ARP entry was checked again, 30 s to two
 * minutes later. Seen as requests stalled for up to two minutes in the podman lifecycle
 * suite's redeploy under a stream (4 of 14 runs back to back; once in CI, 0 of 10 pinned):
 * the stalled replica's ARP entry for its gateway named the bridge's old address, and its
 * answers entered the bridge and were dropped as meant for another host (kfree_skb reason
 * OTHERHOST in ip_rcv_core). netavark itself sets a
 * fixed address on its bridges since October 2023, for this reason (containers/netavark pull
 * 833, "bridge: force static mac on bridge interface"); Debian bookworm's netavark 1.4 does not.
 *
 * Setting the address it already has is enough: the kernel then marks it as set by hand
 * (net/core/dev.c, `dev_set_mac_address`, `netif_set_mac_address` in later kernels:
 * `addr_assign_type = NET_ADDR_SET`) and keeps it ("user has chosen a value so keep it").
 * Resolves with whether it had to pin it; throws when it could not read or set it.
 */
export async function pinBridgeAddress(bridge: string, ip: IpRunner, sysfs = '/sys/class/net'): Promise<boolean> {
  if (!INTERFACE_NAME.test(bridge)) throw new Error(`"${bridge}" is not an interface name`);
  await access(`${sysfs}/${bridge}/bridge`).catch(() => {
    throw new Error(`${bridge} is not a bridge on this host`);
  });
  const read = async (file: string) => (await readFile(`${sysfs}/${bridge}/${file}`, 'utf8')).trim();
  if ((await read('addr_assign_type')) === NET_ADDR_SET) return false;
  await ip(['link', 'set', 'dev', bridge, 'address', await read('address')]);
  return true;
}

/**
 * The host interface on the subnet of a container's `address`: the bridge of its podman
 * network, which holds the network's gateway address. Null when no interface of this host
 * is on that subnet (podman rootless keeps its bridges in a namespace of its own).
 */
export function interfaceOnSubnetOf(address: string, interfaces: NodeJS.Dict<NetworkInterfaceInfo[]> = networkInterfaces()): string | null {
  for (const [name, infos] of Object.entries(interfaces)) {
    const onSubnet = (infos ?? []).some((info) => info.family === 'IPv4' && !info.internal && info.cidr !== null && info.address !== address && inSubnet(address, info.cidr));
    if (onSubnet) return name;
  }
  return null;
}
