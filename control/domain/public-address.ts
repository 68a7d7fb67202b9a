import { isIPv4, isIPv6 } from 'node:net';

/**
 * Which resolved addresses a webhook may be delivered to (docs/webhooks.md, "SSRF"): only
 * public unicast ones. A URL that names, or resolves to, the host itself, the private
 * network, a cloud's metadata service or link-local neighbours is refused, whatever form
 * the address takes (an IPv4-mapped or NAT64 IPv6 address names the IPv4 one inside it).
 */

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

// RFC 6890's special-purpose registries, the parts a request must never reach.
const IPV4_REFUSED: Range[] = [
  v4('0.0.0.0/8', 'unspecified'),
  v4('10.0.0.0/8', 'private'),
  v4('100.64.0.0/10', 'carrier-grade NAT'),
  v4('127.0.0.0/8', 'loopback'),
  v4('169.254.0.0/16', 'link-local (cloud metadata)'),
  v4('172.16.0.0/12', 'private'),
  v4('192.0.0.0/24', 'IETF protocol assignments'),
  v4('192.168.0.0/16', 'private'),
  v4('198.18.0.0/15', 'benchmarking'),
  v4('224.0.0.0/4', 'multicast'),
  v4('240.0.0.0/4', 'reserved'),
];

const IPV6_REFUSED: Range[] = [
  v6('::/128', 'unspecified'),
  v6('::1/128', 'loopback'),
  v6('fc00::/7', 'private (unique local)'),
  v6('fe80::/10', 'link-local'),
  v6('fec0::/10', 'site-local'),
  v6('ff00::/8', 'multicast'),
];

/** IPv6 forms that carry an IPv4 address in their last 32 bits, which is what a connection reaches. */
const IPV4_INSIDE_IPV6: Range[] = [
  v6('::ffff:0:0/96', 'IPv4-mapped'),
  v6('::/96', 'IPv4-compatible'),
  v6('64:ff9b::/96', 'NAT64'),
];

/** Why `address` (an IP literal) may not be reached, or null when it is public. Anything not an IP address is refused. */
export function refusedAddress(address: string): string | null {
  if (isIPv4(address)) return within(address.split('.').map(Number), IPV4_REFUSED);
  const bytes = isIPv6(address) ? ipv6Bytes(address) : undefined;
  if (!bytes) return 'not an IP address';
  const own = within(bytes, IPV6_REFUSED);
  if (own) return own;
  const carrier = IPV4_INSIDE_IPV6.find((range) => matches(bytes, range));
  if (!carrier) return null;
  const inner = within(bytes.slice(12), IPV4_REFUSED);
  return inner && `${inner} (${carrier.name})`;
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
