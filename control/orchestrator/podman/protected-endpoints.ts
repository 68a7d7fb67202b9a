import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';

/** A platform service agents must never reach (docs/contract.md: agents do not reach "the platform's services"). */
export interface ProtectedEndpoint {
  name: string;
  host: string;
  port: number;
}

/** An endpoint with its host resolved; `onHost` when any address of this machine serves it. */
export interface ResolvedEndpoint {
  name: string;
  port: number;
  /** Addresses of other machines (a managed Postgres): refused on the way out. */
  remoteAddresses: string[];
  /** Served by this machine (loopback, 0.0.0.0 or one of its addresses): refused at the host's door, whatever the address. */
  onHost: boolean;
}

interface PlatformAddresses {
  databaseUrl: string;
  redisUrl: string;
  controlHost: string;
  controlPort: number;
}

const DEFAULT_PORTS: Record<string, number> = { 'postgres:': 5432, 'postgresql:': 5432, 'redis:': 6379, 'rediss:': 6379 };

function fromUrl(name: string, url: string): ProtectedEndpoint[] {
  try {
    const parsed = new URL(url);
    const port = Number(parsed.port) || DEFAULT_PORTS[parsed.protocol];
    // A Unix socket (host empty or a path) is out of any container's reach: nothing to fence.
    if (!parsed.hostname || !port) return [];
    return [{ name, host: parsed.hostname.replace(/^\[|\]$/g, ''), port }];
  } catch {
    return [];
  }
}

/**
 * The platform's own services, from the control API's settings, plus `extra`
 * (PODMAN_PROTECTED_ENDPOINTS: authz, the edge, anything else agents must not reach).
 */
export function platformEndpoints(addresses: PlatformAddresses, extra: ProtectedEndpoint[]): ProtectedEndpoint[] {
  return [
    ...fromUrl('postgres', addresses.databaseUrl),
    ...fromUrl('redis', addresses.redisUrl),
    { name: 'control API', host: addresses.controlHost, port: addresses.controlPort },
    ...extra,
  ];
}

/** Parses PODMAN_PROTECTED_ENDPOINTS: `host:port` items separated by commas or spaces. */
export function parseEndpointList(text: string): ProtectedEndpoint[] {
  return text
    .split(/[\s,]+/)
    .filter(Boolean)
    .map((item) => {
      const match = /^\[?([^\]]+?)\]?:(\d{1,5})$/.exec(item);
      const port = Number(match?.[2]);
      if (!match || port < 1 || port > 65535) throw new Error(`PODMAN_PROTECTED_ENDPOINTS: expected host:port items, got "${item}"`);
      return { name: item, host: match[1]!, port };
    });
}

const isLoopbackOrAny = (address: string) => /^127\./.test(address) || address === '0.0.0.0' || address === '::1' || address === '::';

/**
 * Resolves each endpoint's host once. `localAddresses` are this machine's own addresses
 * (an endpoint there is reached through the host's INPUT path, not forwarded).
 */
export async function resolveEndpoints(endpoints: ProtectedEndpoint[], localAddresses: Set<string>): Promise<ResolvedEndpoint[]> {
  return Promise.all(
    endpoints.map(async (endpoint) => {
      const addresses = isIP(endpoint.host)
        ? [endpoint.host]
        : await lookup(endpoint.host, { all: true }).then((found) => found.map((a) => a.address), () => [] as string[]);
      const local = (address: string) => isLoopbackOrAny(address) || localAddresses.has(address);
      return {
        name: endpoint.name,
        port: endpoint.port,
        // Only IPv4: agent networks have no IPv6 (ipv6_enabled is false on the networks the driver creates).
        remoteAddresses: addresses.filter((a) => !local(a) && isIP(a) === 4),
        // An unresolvable host is treated as the host's own: its port is still refused at the door.
        onHost: addresses.length === 0 || addresses.some(local),
      };
    }),
  );
}
