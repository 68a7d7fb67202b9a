import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { parseEndpointList, type ProtectedEndpoint } from './protected-endpoints.js';

/** How containers are run on this host; detected once at start, each overridable. */
export interface PodmanSettings {
  binary: string;
  /** Labels this installation's containers and networks; others on the host are never touched. */
  instance: string;
  /** OCI runtime: crun fails on cgroup v1 hybrid hosts, so runc is preferred when present. */
  runtime: string | null;
  /** Open files per container: podman's default can exceed the host's hard limit and fail the start. */
  nofileLimit: number;
  /**
   * RLIMIT_NPROC counts every process of a uid on the host, across containers, so it is
   * set high (within the host's hard limit) and the per-container cap is the pids cgroup.
   */
  nprocLimit: number;
  pidsLimit: number;
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
  /** How long a replica leaves the routing set before it is stopped, so requests in flight finish. */
  drainMs: number;
  /** Seconds a replica gets to stop after SIGTERM. */
  stopTimeoutSeconds: number;
  /** Deadline of one `podman pull` and one container creation; past it podman is killed and the replicas fail. */
  pullTimeoutMs: number;
}

type Env = Record<string, string | undefined>;

const has = (command: string) => {
  try {
    execFileSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
};

/** The host's hard limit from /proc/self/limits ("Max open files", "Max processes"). */
function hostHardLimit(name: 'Max open files' | 'Max processes'): number {
  try {
    const line = readFileSync('/proc/self/limits', 'utf8').split('\n').find((l) => l.startsWith(name));
    const hard = line?.slice(name.length).trim().split(/\s+/)[1];
    if (hard === 'unlimited') return Number.MAX_SAFE_INTEGER;
    return hard ? Number(hard) : 1024;
  } catch {
    return 1024;
  }
}

/** runc refuses an RLIMIT_NPROC above the kernel's pid_max (seen: 40000 fails where pid_max is 32768). */
function kernelPidMax(): number {
  try {
    return Number(readFileSync('/proc/sys/kernel/pid_max', 'utf8').trim()) || 32_768;
  } catch {
    return 32_768;
  }
}

const numberFrom = (env: Env, name: string, fallback: number) => {
  const value = env[name];
  if (value === undefined || value === '') return fallback;
  const parsed = Number(value);
  if (!Number.isFinite(parsed) || parsed < 0) throw new Error(`${name}: expected a non-negative number, got "${value}"`);
  return parsed;
};

export function detectPodmanSettings(env: Env): PodmanSettings {
  const binary = env.PODMAN_BINARY || 'podman';
  const runtime = env.PODMAN_RUNTIME || (has('runc') ? 'runc' : null);
  const instance = env.PODMAN_INSTANCE || 'default';
  if (!/^[a-zA-Z0-9_.-]{1,64}$/.test(instance)) throw new Error(`PODMAN_INSTANCE: letters, digits, ".", "_" or "-" only, got "${instance}"`);
  return {
    binary,
    instance,
    runtime,
    nofileLimit: numberFrom(env, 'PODMAN_NOFILE_LIMIT', Math.min(hostHardLimit('Max open files'), 65_536)),
    nprocLimit: numberFrom(env, 'PODMAN_NPROC_LIMIT', Math.min(hostHardLimit('Max processes'), kernelPidMax())),
    pidsLimit: 512,
    startGraceMs: numberFrom(env, 'START_GRACE_SECONDS', 30) * 1000,
    restartBudget: numberFrom(env, 'RESTART_BUDGET', 5),
    restartBackoffBaseMs: numberFrom(env, 'RESTART_BACKOFF_BASE_MS', 1000),
    restartBackoffMaxMs: numberFrom(env, 'RESTART_BACKOFF_MAX_MS', 30_000),
    pollIntervalMs: numberFrom(env, 'PODMAN_POLL_INTERVAL_MS', 1000),
    firewall: (env.PODMAN_FIREWALL ?? 'true') !== 'false' && process.getuid?.() === 0 && has('nft'),
    networkBackend: networkBackendFrom(env.PODMAN_NETWORK_BACKEND),
    probeBusybox: env.PODMAN_PROBE_BUSYBOX || '/bin/busybox',
    probeConnectTimeoutSeconds: Math.max(1, Math.round(numberFrom(env, 'PODMAN_PROBE_TIMEOUT_SECONDS', 2))),
    protectedEndpoints: parseEndpointList(env.PODMAN_PROTECTED_ENDPOINTS ?? ''),
    drainMs: numberFrom(env, 'DRAIN_SECONDS', 2) * 1000,
    stopTimeoutSeconds: numberFrom(env, 'STOP_TIMEOUT_SECONDS', 10),
    pullTimeoutMs: Math.max(1, numberFrom(env, 'PULL_TIMEOUT_SECONDS', 120)) * 1000,
  };
}

function networkBackendFrom(value: string | undefined): PodmanSettings['networkBackend'] {
  if (!value) return null;
  if (value !== 'netavark' && value !== 'cni') throw new Error(`PODMAN_NETWORK_BACKEND: netavark or cni, got "${value}"`);
  return value;
}

export const podmanGlobalArgs = (settings: PodmanSettings) => [
  ...(settings.runtime ? ['--runtime', settings.runtime] : []),
  ...(settings.networkBackend ? ['--network-backend', settings.networkBackend] : []),
];
