import { isIPv4, isIPv6 } from 'node:net';

/**
 * Which addresses a webhook may be delivered to (docs/webhooks.md, "SSRF"). Link-local
 * addresses and the clouds' metadata services are never reached, whatever the settings:
 * they hand out the host's credentials. Every other special-purpose address (loopback,
 * private, documentation, benchmarking, reserved, multicast…) is refused unless
 * WEBHOOK_ALLOW_PRIVATE_NETWORKS is on, for a single-host install whose receivers live
 * there. An IPv6 address that carries an IPv4 one (mapped, compatible, NAT64, 6to4) is
 * judged by the IPv4 address inside, which is what a connection to it reaches.
 */

/** What the platform's settings let a delivery reach beyond public unicast addresses. */
export interface AddressPolicy {
  readonly allowPrivateNetworks: boolean;
}

/** `never`: refused whatever the policy; `special`: refused unless private networks are allowed. */
export type AddressClass = { kind: 'public' } | { kind: 'never' | 'special'; why: string };

interface Range {
  bytes: number[];
  bits: number;
  name: string;
}

const v4 = (cidr: string, name: string): Range => {
  const [address, bits] = cidr.split('/') as [string, string];
  return { bytes: address.split('.').map(Number), bits: Number(bits), name };
};

const v6 = (cidr: string, name: string): Range => {
  const [address, bits] = cidr.split('/') as [string, string];
  return { bytes: ipv6Bytes(address)!, bits: Number(bits), name };
};

// The metadata services first, so that they are named as such rather than by their range.
// AWS: Instance Metadata Service (IPv4 and IPv6) and the EKS Pod Identity Agent; Google
// Cloud's IPv6 metadata server; Alibaba Cloud's and Scaleway's metadata services.
const IPV4_NEVER: Range[] = [
  v4('169.254.169.254/32', 'cloud metadata service'),
  v4('100.100.100.200/32', 'cloud metadata service (Alibaba Cloud)'),
  v4('169.254.0.0/16', 'link-local'),
];

const IPV6_NEVER: Range[] = [
  v6('fd00:ec2::254/128', 'cloud metadata service (AWS)'),
  v6('fd00:ec2::23/128', 'cloud credentials service (AWS EKS Pod Identity)'),
  v6('fd20:ce::254/128', 'cloud metadata service (Google Cloud)'),
  v6('fd00:42::42/128', 'cloud metadata service (Scaleway)'),
  v6('fe80::/10', 'link-local'),
];

// IANA IPv4 Special-Purpose Address Registry (RFC 6890 and its updates) without the
// globally reachable entries, and multicast. The more specific first.
const IPV4_SPECIAL: Range[] = [
  v4('0.0.0.0/8', 'unspecified ("this network")'),
  v4('10.0.0.0/8', 'private'),
  v4('100.64.0.0/10', 'carrier-grade NAT (shared address space)'),
  v4('127.0.0.0/8', 'loopback'),
  v4('172.16.0.0/12', 'private'),
  v4('192.0.0.0/24', 'IETF protocol assignments'),
  v4('192.0.2.0/24', 'documentation (TEST-NET-1)'),
  v4('192.88.99.0/24', 'deprecated 6to4 relay anycast'),
  v4('192.168.0.0/16', 'private'),
  v4('198.18.0.0/15', 'benchmarking'),
  v4('198.51.100.0/24', 'documentation (TEST-NET-2)'),
  v4('203.0.113.0/24', 'documentation (TEST-NET-3)'),
  v4('224.0.0.0/4', 'multicast'),
  v4('255.255.255.255/32', 'limited broadcast'),
  v4('240.0.0.0/4', 'reserved'),
];

// IANA IPv6 Special-Purpose Address Registry, multicast and the deprecated site-local
// range. Outside 2000::/3 (global unicast, IANA's IPv6 Address Space registry) nothing
// is public, bar the IPv4-carrying forms below.
const IPV6_SPECIAL: Range[] = [
  v6('::/128', 'unspecified'),
  v6('::1/128', 'loopback'),
  v6('100::/64', 'discard-only'),
  v6('100:0:0:1::/64', 'dummy prefix'),
  v6('2001::/23', 'IETF protocol assignments'),
  v6('2001:db8::/32', 'documentation'),
  v6('3fff::/20', 'documentation'),
  v6('5f00::/16', 'segment routing (SRv6)'),
  v6('fc00::/7', 'private (unique local)'),
  v6('fec0::/10', 'site-local'),
  v6('ff00::/8', 'multicast'),
];

const GLOBAL_UNICAST = v6('2000::/3', 'global unicast');

/** IPv6 forms that carry an IPv4 address, where it sits, and whether the form itself is public. */
interface Carrier extends Range {
  at: number;
  public: boolean;
}

const carrier = (cidr: string, name: string, at: number, isPublic: boolean): Carrier => ({ ...v6(cidr, name), at, public: isPublic });

const IPV4_CARRIERS: Carrier[] = [
  carrier('::ffff:0:0/96', 'IPv4-mapped', 12, true),
  carrier('::ffff:0:0:0/96', 'IPv4-translated', 12, true),
  carrier('64:ff9b::/96', 'NAT64', 12, true),
  carrier('64:ff9b:1::/48', 'local-use NAT64', 12, false),
  carrier('2002::/16', '6to4', 2, true),
  // Last: it holds :: and ::1, which IPV6_SPECIAL names first.
  carrier('::/96', 'IPv4-compatible', 12, true),
];

/** What `address`, an IP literal, is; undefined when it is not one. */
export function classifyAddress(address: string): AddressClass | undefined {
  if (isIPv4(address)) return classifyV4(address.split('.').map(Number));
  const bytes = isIPv6(address) ? ipv6Bytes(address) : undefined;
  if (!bytes) return undefined;
  const never = within(bytes, IPV6_NEVER);
  if (never) return { kind: 'never', why: never };
  const special = within(bytes, IPV6_SPECIAL);
  if (special) return { kind: 'special', why: special };
  const form = IPV4_CARRIERS.find((range) => matches(bytes, range));
  if (form) {
    const inner = classifyV4(bytes.slice(form.at, form.at + 4));
    if (inner.kind !== 'public') return { kind: inner.kind, why: `${inner.why} (${form.name})` };
    return form.public ? inner : { kind: 'special', why: form.name };
  }
  return matches(bytes, GLOBAL_UNICAST) ? { kind: 'public' } : { kind: 'special', why: 'reserved (outside global unicast 2000::/3)' };
}

/**
 * Why `address` (an IP literal) may not be reached under `policy`, as the end of a
 * sentence ("a loopback address (…)"), or null when it may. Anything not an IP address is refused.
 */
export function refusedAddress(address: string, policy: AddressPolicy): string | null {
  const found = classifyAddress(address);
  if (!found) return 'not an IP address';
  if (found.kind === 'public') return null;
  if (found.kind === 'never') return `a ${found.why} address, which webhooks never reach`;
  return policy.allowPrivateNetworks ? null : `a ${found.why} address (WEBHOOK_ALLOW_PRIVATE_NETWORKS is off)`;
}

function classifyV4(bytes: number[]): AddressClass {
  const never = within(bytes, IPV4_NEVER);
  if (never) return { kind: 'never', why: never };
  const special = within(bytes, IPV4_SPECIAL);
  return special ? { kind: 'special', why: special } : { kind: 'public' };
}

function within(bytes: number[], ranges: Range[]): string | null {
  return ranges.find((range) => matches(bytes, range))?.name ?? null;
}

function matches(bytes: number[], range: Range): boolean {
  for (let bit = 0; bit < range.bits; bit += 8) {
    const take = Math.min(8, range.bits - bit);
    const mask = (0xff << (8 - take)) & 0xff;
    const index = bit / 8;
    if ((bytes[index]! & mask) !== (range.bytes[index]! & mask)) return false;
  }
  return true;
}

/** The 16 bytes of an IPv6 literal (with `::` and a dotted IPv4 tail expanded; a `%zone` dropped). */
function ipv6Bytes(address: string): number[] | undefined {
  let text = address.split('%')[0]!.toLowerCase();
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted[1]!.split('.').map(Number) as [number, number, number, number];
    text = text.slice(0, dotted.index) + `${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.includes('::') ? (text.split('::') as [string, string]) : [text, undefined];
  const groups = (part: string) => (part === '' ? [] : part.split(':'));
  const front = groups(head);
  const back = tail === undefined ? [] : groups(tail);
  const missing = 8 - front.length - back.length;
  if (missing < 0 || (tail === undefined && missing !== 0)) return undefined;
  const all = [...front, ...Array<string>(missing).fill('0'), ...back];
  if (all.some((group) => !/^[0-9a-f]{1,4}$/.test(group))) return undefined;
  return all.flatMap((group) => {
    const value = parseInt(group, 16);
    return [value >> 8, value & 0xff];
  });
}
