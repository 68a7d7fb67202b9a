import type { ResolvedEndpoint } from './protected-endpoints.js';

/** One TCP connect the probe makes from inside an agent network, and what must happen. */
export interface ProbeTarget {
  label: string;
  host: string;
  port: number;
  /** `closed`: the connection must not open (refused, reset or timed out). `open`: it must open. */
  expect: 'open' | 'closed';
  /** For an `open` target: what it means when it does not. */
  unreachable?: string;
}

export const METADATA = { host: '169.254.169.254', port: 80 } as const;

export interface ProbeLayout {
  /** The probe container's own listener: a connect that must open, or the probe proves nothing. */
  self: { host: string; port: number };
  /** The network's gateway: the host as its containers see it. */
  gateway: string | null;
  /** The host's other addresses a container can route to (its LAN address, ...). */
  hostAddresses: string[];
  endpoints: ResolvedEndpoint[];
  /** A listener on another agent-like network (the canary); null when probing the canary's own network. */
  otherNetwork: { host: string; port: number } | null;
  /** A listener on 0.0.0.0 of the host that is no one's (the probe opens it): the host's input is default-deny. */
  unrelatedHostPort: number | null;
  /**
   * The agent services' port on the gateway (issue 37), the one platform port replicas must
   * reach; null when the platform runs none, or it was not listening when the probe began.
   */
  agentServices: { host: string; port: number } | null;
}

/** Every connect of one probe: the metadata service, each platform port and an unrelated port at each host address, another network. */
export function probeTargets(layout: ProbeLayout): ProbeTarget[] {
  const targets: ProbeTarget[] = [
    { label: 'the probe itself', ...layout.self, expect: 'open', unreachable: 'the probe could not connect to its own listener, so its other results mean nothing' },
    { label: 'the metadata service', ...METADATA, expect: 'closed' },
  ];
  if (layout.agentServices) {
    targets.push({ label: 'the agent services', ...layout.agentServices, expect: 'open', unreachable: "replicas could not reach the agent services, so they could not keep conversations; the agent networks' firewall must let AGENT_SERVICES_PORT through" });
  }
  const hostNames = [...new Set([layout.gateway, 'host.containers.internal', ...layout.hostAddresses].filter((h): h is string => Boolean(h)))];
  for (const endpoint of layout.endpoints) {
    if (endpoint.onHost) for (const host of hostNames) targets.push({ label: endpoint.name, host, port: endpoint.port, expect: 'closed' });
    for (const host of endpoint.remoteAddresses) targets.push({ label: endpoint.name, host, port: endpoint.port, expect: 'closed' });
  }
  if (layout.unrelatedHostPort !== null) {
    for (const host of hostNames) targets.push({ label: 'an unrelated host service', host, port: layout.unrelatedHostPort, expect: 'closed' });
  }
  if (layout.otherNetwork) targets.push({ label: 'another agent network', ...layout.otherNetwork, expect: 'closed' });
  return targets;
}

/**
 * At most this many connects are in flight at once. Each is one process in the probe
 * container, whose pids cgroup allows 64 (isolation.ts, listenerArguments) beside its
 * httpd and this shell: a fork refused there loses a target's line, and the check then
 * fails closed on a network that is isolated (seen with 33 targets, when each connect
 * was a subshell and an nc: two processes apiece).
 */
export const PROBE_CONNECTS_AT_ONCE = 40;

/**
 * A busybox sh script: waits (up to ~3 s) for the probe's own listener, then connects
 * to the targets with `nc -w`, PROBE_CONNECTS_AT_ONCE at a time, one line per target
 * ("<index> open|closed", from nc's exit status), then "done". Targets come as
 * arguments `host:port`, the first being the listener.
 */
export const probeScript = (connectTimeoutSeconds: number) => `
bb=/bin/busybox
n=0
until $bb nc -w 1 "\${1%:*}" "\${1##*:}" </dev/null >/dev/null 2>&1; do
  n=$((n+1)); [ $n -ge 30 ] && break; $bb sleep 0.1
done
report() {
  for job in $jobs; do
    if wait "\${job#*:}"; then echo "\${job%%:*} open"; else echo "\${job%%:*} closed"; fi
  done
  jobs=""
}
i=0
jobs=""
for t in "$@"; do
  $bb nc -w ${connectTimeoutSeconds} "\${t%:*}" "\${t##*:}" </dev/null >/dev/null 2>&1 &
  jobs="$jobs $i:$!"
  i=$((i+1))
  [ $((i % ${PROBE_CONNECTS_AT_ONCE})) -eq 0 ] && report
done
report
echo done
`;

export const probeArguments = (targets: ProbeTarget[]) => targets.map((t) => `${t.host}:${t.port}`);

/**
 * What the probe's output says is wrong, one sentence per problem; empty when every
 * target behaved as expected. Output that is cut short is a problem too: fail closed.
 */
export function probeProblems(targets: ProbeTarget[], output: string): string[] {
  const seen = new Map<number, string>();
  for (const match of output.matchAll(/^(\d+) (open|closed)$/gm)) seen.set(Number(match[1]), match[2]!);
  if (!/^done$/m.test(output) || seen.size !== targets.length) {
    return [`the probe did not report on every connect (${seen.size} of ${targets.length}): ${output.trim().slice(-200) || 'no output'}`];
  }
  const problems: string[] = [];
  targets.forEach((target, index) => {
    const result = seen.get(index);
    if (result === target.expect) return;
    problems.push(target.expect === 'open' ? `${target.label} at ${target.host}:${target.port} cannot be reached: ${target.unreachable}` : `${target.label} at ${target.host}:${target.port} is reachable`);
  });
  return problems;
}
