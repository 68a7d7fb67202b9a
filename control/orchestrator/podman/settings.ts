import { resolve } from 'node:path';
import { DEFAULT_AGENT_SUBNET_POOL, parseSubnetPool, type SubnetPool } from '../../../contract/agent-subnet-pool.js';
import type { SettingReader } from '../../../contract/settings-reader.js';
import { podmanEnvironmentOf } from './child-environment.js';
import { parseEndpointList, type ProtectedEndpoint } from './protected-endpoints.js';

/** How containers are run on this host: the settings as loaded, completed from the host by detectHost (host.ts). */
export interface PodmanSettings {
  binary: string;
  /** Labels this installation's containers and networks; others on the host are never touched. */
  instance: string;
  /**
   * The host directory of the instance's files (PODMAN_STATE_DIR), at one path so that a
   * control API's next run finds what the last one left, even if it was killed: its
   * replicas' token directories, which running containers keep mounted; the isolation
   * check's busybox root, which a canary left running still runs from; and the files of
   * calls a kill may cut short (the checkpoint probe's, and the env and auth files of
   * secret-scratch.ts), cleared by the next run. The driver removes it at its stop when
   * nothing in it is left; a test removes it whole.
   */
  stateDirectory: string;
  /** OCI runtime: crun fails on cgroup v1 hybrid hosts, so runc is preferred when present. */
  runtime: string | null;
  /** Open files per container: podman's default can exceed the host's hard limit and fail the start. */
  nofileLimit: number;
  /**
   * RLIMIT_NPROC counts every process of a uid on the host, across containers, so it is
   * set high (within the host's hard limit) and the per-container cap is the pids cgroup.
   */
  nprocLimit: number;
  /** A replica that never accepts connections joins the routing set after this (so the edge answers 502, not 503). */
  startGraceMs: number;
  /** Restarts allowed before a replica is `crashed`. */
  restartBudget: number;
  restartBackoffBaseMs: number;
  restartBackoffMaxMs: number;
  /** How often containers are inspected. */
  pollIntervalMs: number;
  /**
   * The nftables table that fences agent networks (firewall-rules.ts; needs root and nft).
   * Off or on, isolation is checked by its effect before any replica runs.
   */
  firewall: boolean;
  /** `--network-backend` for every podman command; null leaves podman's configured one (ensure-deps selects netavark). */
  networkBackend: 'netavark' | 'cni' | null;
  /** A static busybox: the isolation probe's only program, so it needs no image. */
  probeBusybox: string;
  /** How long one connect of the isolation probe may take before it counts as not opened. */
  probeConnectTimeoutSeconds: number;
  /** More `host:port` the agents must not reach besides Postgres, Redis and the control API (authz, the edge, ...). */
  protectedEndpoints: ProtectedEndpoint[];
  /** Where every agent network's /24 comes from; held unreachable as a whole (pool-route.ts). */
  agentSubnets: SubnetPool;
  /**
   * Host TCP ports agents may open (a model server on the host); every other connection
   * from an agent network to the host is refused, except DNS to the network's gateway.
   */
  agentHostPorts: number[];
  /** How long a replica leaves the routing set before it is stopped, so requests in flight finish. */
  drainMs: number;
  /** Seconds a replica gets to stop after SIGTERM. */
  stopTimeoutSeconds: number;
  /** Deadline of one `podman pull` and one container creation; past it podman is killed and the replicas fail. */
  pullTimeoutMs: number;
  /**
   * PODMAN_REGISTRY_CERTS_DIR: `--cert-dir` for pulls (the CA of a private registry, as
   * `*.crt`); null leaves podman's own, /etc/containers/certs.d/<host:port>/.
   */
  registryCertsDir: string | null;
  /**
   * What podman children get as their environment (child-environment.ts): only what podman
   * reads, never the control API's own secrets (MASTER_KEYS, DATABASE_URL, ...).
   */
  environment: Record<string, string>;
}

/**
 * The podman settings as the environment gives them. Loading probes nothing: what the
 * operator leaves to the host is null (or, for the firewall, only asked for), and
 * detectHost (host.ts) settles it where the driver is created.
 */
export interface LoadedPodmanSettings extends Omit<PodmanSettings, 'stateDirectory' | 'runtime' | 'nofileLimit' | 'nprocLimit' | 'firewall'> {
  /** PODMAN_STATE_DIR, made absolute; null: the host's runtime directory (host.ts, stateDirectoryOf). */
  stateDirectory: string | null;
  /** PODMAN_RUNTIME; null: runc when the host has it, else podman's configured runtime. */
  runtime: string | null;
  /** PODMAN_NOFILE_LIMIT; null: the host's hard limit, at most 65536. */
  nofileLimit: number | null;
  /** PODMAN_NPROC_LIMIT; null: the host's hard limit, at most the kernel's pid_max. */
  nprocLimit: number | null;
  /** PODMAN_FIREWALL: wanted; it runs only as root with nft on the host. */
  firewall: boolean;
}

/** Reads the PODMAN_* settings and the replica lifecycle ones (shared with the Nomad driver, same bounds). */
export function readPodmanSettings(read: SettingReader): LoadedPodmanSettings {
  // Part of nftables table and network names (firewall-rules.ts), so kept to a safe alphabet.
  const instance = read.matching('PODMAN_INSTANCE', 'default', /^[a-zA-Z0-9_.-]{1,64}$/, 'letters, digits, ".", "_" or "-" (1 to 64)');
  return {
    binary: read.string('PODMAN_BINARY', 'podman'),
    instance,
    // Absolute: podman takes a mount's source as given, and the control API may be started from anywhere.
    stateDirectory: optionalAbsolute(read.optionalString('PODMAN_STATE_DIR')),
    runtime: read.optionalString('PODMAN_RUNTIME'),
    // Linux fs/file.c: setrlimit refuses RLIMIT_NOFILE above fs.nr_open, 1024*1024 unless raised (`sysctl_nr_open`).
    nofileLimit: read.integer('PODMAN_NOFILE_LIMIT', null, 1, 1_048_576, "Linux's default fs.nr_open"),
    // include/linux/threads.h `PID_MAX_LIMIT`: pid_max is at most 4*1024*1024 on 64-bit, and runc refuses more than pid_max.
    nprocLimit: read.integer('PODMAN_NPROC_LIMIT', null, 1, 4_194_304, "Linux's highest pid_max"),
    startGraceMs: read.number('START_GRACE_SECONDS', 30, 0, 3600) * 1000,
    restartBudget: read.integer('RESTART_BUDGET', 5, 0, 100),
    restartBackoffBaseMs: read.number('RESTART_BACKOFF_BASE_MS', 1000, 0, 3_600_000),
    restartBackoffMaxMs: read.number('RESTART_BACKOFF_MAX_MS', 30_000, 0, 3_600_000),
    pollIntervalMs: read.number('PODMAN_POLL_INTERVAL_MS', 1000, 10, 60_000),
    firewall: read.boolean('PODMAN_FIREWALL', true),
    networkBackend: read.oneOf('PODMAN_NETWORK_BACKEND', ['netavark', 'cni'] as const, null),
    probeBusybox: read.string('PODMAN_PROBE_BUSYBOX', '/bin/busybox'),
    // Whole seconds: busybox nc's -w takes an integer.
    probeConnectTimeoutSeconds: read.integer('PODMAN_PROBE_TIMEOUT_SECONDS', 2, 1, 60),
    protectedEndpoints: read.parsed('PODMAN_PROTECTED_ENDPOINTS', [], parseEndpointList),
    agentSubnets: read.parsed('PODMAN_AGENT_SUBNETS', parseSubnetPool('PODMAN_AGENT_SUBNETS', DEFAULT_AGENT_SUBNET_POOL), (value) => parseSubnetPool('PODMAN_AGENT_SUBNETS', value)),
    agentHostPorts: read.parsed('PODMAN_AGENT_HOST_PORTS', [], parsePortList),
    drainMs: read.number('DRAIN_SECONDS', 2, 0, 3600) * 1000,
    // Whole seconds: podman's --stop-timeout and rm --time take an unsigned integer.
    stopTimeoutSeconds: read.integer('STOP_TIMEOUT_SECONDS', 10, 0, 3600),
    pullTimeoutMs: read.number('PULL_TIMEOUT_SECONDS', 120, 1, 86_400) * 1000,
    registryCertsDir: read.optionalString('PODMAN_REGISTRY_CERTS_DIR'),
    environment: read.passthrough(podmanEnvironmentOf),
  };
}

export const podmanGlobalArgs = (settings: Pick<PodmanSettings, 'runtime' | 'networkBackend'>) => [
  ...(settings.runtime ? ['--runtime', settings.runtime] : []),
  ...(settings.networkBackend ? ['--network-backend', settings.networkBackend] : []),
];

const optionalAbsolute = (path: string | null) => (path === null ? null : resolve(path));

/** `11434,8000` → the ports, each 1-65535; throws naming the setting. */
function parsePortList(value: string): number[] {
  const items = value.split(',').map((item) => item.trim()).filter(Boolean);
  const ports = items.map(Number);
  const bad = items.find((item, i) => !/^\d+$/.test(item) || ports[i]! < 1 || ports[i]! > 65535);
  if (bad !== undefined) throw new Error(`PODMAN_AGENT_HOST_PORTS: expected TCP ports (1-65535) separated by commas, got "${bad}"`);
  return [...new Set(ports)].sort((a, b) => a - b);
}
