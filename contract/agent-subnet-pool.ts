import { BlockList, isIPv4 } from 'node:net';

/**
 * The IPv4 range every agent network's subnet is taken from on a podman host
 * (docs/orchestration.md, "Addresses"). The podman driver installs an `unreachable` route
 * for the whole range, so an address whose bridge is gone fails on this host instead of
 * following the default route to another machine (issue 31); the local edge forwards to
 * no address outside it. podman's own first default pool, so a host whose podman already
 * avoids it (its LAN, a VPN) needs no change.
 */
export const DEFAULT_AGENT_SUBNET_POOL = '10.89.0.0/16';

/** Each agent network is one /24 of the pool, as podman's own pools hand them out. */
export const AGENT_SUBNET_BITS = 24;

export interface SubnetPool {
  /** As written: `a.b.c.d/n`, with no host bits set. */
  readonly cidr: string;
  readonly contains: (address: string) => boolean;
  /** The pool's /24s in order, each as `a.b.c.0/24`. */
  readonly subnets: () => Generator<string>;
}

const toNumber = (address: string) => address.split('.').reduce((n, octet) => n * 256 + Number(octet), 0);
const toAddress = (n: number) => [24, 16, 8, 0].map((shift) => Math.floor(n / 2 ** shift) % 256).join('.');

/** `a.b.c.d/n` (n from 8 to 24) → the pool; throws an Error naming `setting` and what is wrong. */
export function parseSubnetPool(setting: string, text: string): SubnetPool {
  const match = /^(\d{1,3}(?:\.\d{1,3}){3})\/(\d{1,2})$/.exec(text.trim());
  const bits = Number(match?.[2]);
  if (!match || !isIPv4(match[1]!) || bits < 8 || bits > AGENT_SUBNET_BITS) {
    throw new Error(`${setting}: expected an IPv4 range a.b.c.d/n with n from 8 to ${AGENT_SUBNET_BITS} (each agent network is a /${AGENT_SUBNET_BITS} of it), got "${text}"`);
  }
  const base = toNumber(match[1]!);
  const size = 2 ** (32 - bits);
  if (base % size !== 0) throw new Error(`${setting}: ${text} has host bits set; did you mean ${toAddress(base - (base % size))}/${bits}?`);
  const range = new BlockList();
  range.addSubnet(match[1]!, bits, 'ipv4');
  return Object.freeze({
    cidr: `${match[1]}/${bits}`,
    contains: (address: string) => isIPv4(address) && range.check(address, 'ipv4'),
    *subnets() {
      for (let start = base; start < base + size; start += 2 ** (32 - AGENT_SUBNET_BITS)) yield `${toAddress(start)}/${AGENT_SUBNET_BITS}`;
    },
  });
}

/** The first /24 of `pool` that no subnet in `used` overlaps; null when the pool is full. */
export function freeSubnet(pool: SubnetPool, used: readonly string[]): string | null {
  const taken = new BlockList();
  for (const cidr of used) {
    const [address, bits] = cidr.split('/');
    if (address && isIPv4(address) && bits !== undefined) taken.addSubnet(address, Number(bits), 'ipv4');
  }
  for (const subnet of pool.subnets()) {
    const first = subnet.split('/')[0]!;
    const start = toNumber(first);
    // A /24 is free when neither end is inside a used range and no used range starts inside it.
    const overlapsUsed = taken.check(first, 'ipv4') || taken.check(toAddress(start + 255), 'ipv4') ||
      used.some((cidr) => { const n = toNumber(cidr.split('/')[0] ?? ''); return n >= start && n <= start + 255; });
    if (!overlapsUsed) return subnet;
  }
  return null;
}

/** An address inside `subnet` (a.b.c.0/24): host `.host`. */
export const addressIn = (subnet: string, host: number) => toAddress(toNumber(subnet.split('/')[0]!) + host);
