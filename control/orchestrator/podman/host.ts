import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import type { LoadedPodmanSettings, PodmanSettings } from './settings.js';

/**
 * What the podman settings leave to the host, probed where the driver is created
 * (create.ts), not while the environment is read: loading stays a pure function of it.
 */
export function detectHost(loaded: LoadedPodmanSettings): PodmanSettings {
  return Object.freeze({
    ...loaded,
    runtime: podmanRuntime(loaded),
    nofileLimit: loaded.nofileLimit ?? Math.min(hostHardLimit('Max open files'), 65_536),
    nprocLimit: loaded.nprocLimit ?? Math.min(hostHardLimit('Max processes'), kernelPidMax()),
    // The table needs root and the nft command; without them isolation still is checked by effect.
    firewall: loaded.firewall && process.getuid?.() === 0 && has('nft'),
  });
}

/** The OCI runtime the driver runs containers with: crun fails on cgroup v1 hybrid hosts, so runc when present. */
export function podmanRuntime(loaded: Pick<LoadedPodmanSettings, 'runtime'>): string | null {
  return loaded.runtime ?? (has('runc') ? 'runc' : null);
}

function has(command: string): boolean {
  try {
    execFileSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

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
