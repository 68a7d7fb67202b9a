import { goQuote } from './go-format.js';
import { MultiError } from './multierror.js';

/**
 * nomad/structs/structs.go, `TaskGroup.validateNetworks`: port labels unique across the
 * group's and its tasks' networks, static ports unique per host network and within
 * 0..65535, `to` within -1..65535, and a hostname that is a DNS name. CNI args and
 * `ignore_collision` are not in the fake's schema.
 */
type Json = Record<string, any>;

const MAX_PORT = 65535;

export function validateNetworks(tg: Json): MultiError | null {
  const errors = new MultiError();
  const labels = new Map<string, string>();
  const staticPorts = new Map<string, Map<number, string>>();
  const reserve = (port: Json, owner: string) => {
    const hostNetwork = port.HostNetwork || 'default';
    const ports = staticPorts.get(hostNetwork) ?? new Map<number, string>();
    if (ports.has(port.Value)) errors.push(`Static port ${port.Value} already reserved by ${ports.get(port.Value)}`);
    else if (port.Value > MAX_PORT) errors.push(`Port ${port.Label} (${port.Value}) cannot be greater than ${MAX_PORT}`);
    else staticPorts.set(hostNetwork, ports.set(port.Value, owner));
  };
  for (const network of tg.Networks ?? []) {
    for (const port of [...(network.ReservedPorts ?? []), ...(network.DynamicPorts ?? [])]) {
      if (labels.has(port.Label)) errors.push(`Port label ${port.Label} already in use by ${labels.get(port.Label)}`);
      else labels.set(port.Label, 'taskgroup network');
      if (port.Value !== 0) reserve(port, `taskgroup network:${port.Label}`);
      if (port.To < -1) errors.push(`Port ${goQuote(port.Label)} cannot be mapped to negative value ${port.To}`);
      else if (port.To > MAX_PORT) errors.push(`Port ${goQuote(port.Label)} cannot be mapped to a port (${port.To}) greater than ${MAX_PORT}`);
    }
    if (network.Hostname !== '' && !network.Hostname.includes('${') && !isDomainName(network.Hostname)) errors.push('Hostname is not a valid DNS name');
  }
  // Task networks are deprecated but still checked against the group's labels and static ports.
  for (const task of tg.Tasks) {
    for (const network of task.Resources?.Networks ?? []) {
      for (const port of [...(network.ReservedPorts ?? []), ...(network.DynamicPorts ?? [])]) {
        if (labels.has(port.Label)) errors.push(`Port label ${port.Label} already in use by ${labels.get(port.Label)}`);
        if (port.Value !== 0) reserve(port, `${task.Name}:${port.Label}`);
      }
    }
  }
  return errors.orNil();
}

/**
 * github.com/miekg/dns v1.1.72 (Nomad's go.mod), defaults.go, `IsDomainName`: no leading
 * or doubled dot, labels of at most 63 octets, at most 256 octets in wire format, no
 * dangling escape; `\\.` and `\\DDD` escapes are one octet.
 */
function isDomainName(name: string): boolean {
  if (name === '') return false;
  const bytes = Buffer.from(isFqdn(name) ? name : `${name}.`, 'utf8');
  const isDigit = (i: number) => i < bytes.length && bytes[i]! >= 0x30 && bytes[i]! <= 0x39;
  let off = 0;
  let begin = 0;
  let wasDot = false;
  let escape = false;
  for (let i = 0; i < bytes.length; i += 1) {
    if (bytes[i] === 0x5c) {
      escape = !escape;
      if (off + 1 > 256) return false;
      const ddd = isDigit(i + 1) && isDigit(i + 2) && isDigit(i + 3);
      i += ddd ? 3 : 1;
      begin += ddd ? 3 : 1;
      wasDot = false;
    } else if (bytes[i] === 0x2e) {
      escape = false;
      if (i === 0 && bytes.length > 1) return false;
      if (wasDot) return false;
      wasDot = true;
      const labelLength = i - begin;
      if (labelLength >= 64) return false;
      off += 1 + labelLength;
      if (off > 256) return false;
      begin = i + 1;
    } else {
      escape = false;
      wasDot = false;
    }
  }
  return !escape;
}

/** miekg/dns v1.1.72 defaults.go, `IsFqdn`: a trailing dot after an even number of backslashes. */
function isFqdn(name: string): boolean {
  if (!name.endsWith('.')) return false;
  const backslashes = /\\*$/.exec(name.slice(0, -1))![0].length;
  return backslashes % 2 === 0;
}
