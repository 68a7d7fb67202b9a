import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { ConfigError } from '../../../contract/settings-reader.js';
import type { LoadedPodmanSettings, PodmanSettings } from './settings.js';

/**
 * What the podman settings leave to the host, probed where the driver is created
 * (create.ts), not while the environment is read: loading stays a pure function of it.
 */
export function detectHost(loaded: LoadedPodmanSettings): PodmanSettings {
  return Object.freeze({
    ...loaded,
    stateDirectory: stateDirectoryOf(loaded),
    runtime: podmanRuntime(loaded),
    nofileLimit: loaded.nofileLimit ?? Math.min(hostHardLimit('Max open files'), 65_536),
    nprocLimit: loaded.nprocLimit ?? Math.min(hostHardLimit('Max processes'), kernelPidMax()),
    // The table needs root and the nft command; without them isolation still is checked by effect.
    firewall: loaded.firewall && process.getuid?.() === 0 && has('nft'),
  });
}

/** What the default of PODMAN_STATE_DIR depends on, passed in so that each case can be tested on one host. */
export interface HostDirectories {
  /** Whether the control API runs as root. */
  root: boolean;
  /** $XDG_RUNTIME_DIR: a user's own directory of this boot, when the login manager made one. */
  userRuntimeDirectory: string | undefined;
  /** $TMPDIR, or /tmp. */
  temporaryDirectory: string;
  exists(path: string): boolean;
}

/** This host's, with `environment` the one podman runs with (PodmanSettings.environment), whose XDG_RUNTIME_DIR rootless podman uses too. */
export const hostDirectories = (environment: Record<string, string>): HostDirectories => ({
  root: process.getuid?.() === 0,
  userRuntimeDirectory: environment.XDG_RUNTIME_DIR || undefined,
  temporaryDirectory: tmpdir(),
  exists: existsSync,
});

/**
 * The driver's directory: PODMAN_STATE_DIR, else one of the instance's own where podman
 * keeps the state of this boot. That is /run/libpod for root and $XDG_RUNTIME_DIR/libpod for
 * anyone else (containers/common, pkg/config/default.go: defaultTmpDir, getLibpodTmpDir in
 * default_linux.go): what is in it, tokens of running replicas and files of calls in flight,
 * is no more use after a reboot than podman's own. Not /tmp, which was the default until
 * 2026-11: a service with systemd's PrivateTmp gets a /tmp of its own at every start
 * (systemd/systemd, src/core/namespace.c: setup_one_tmp_dir, bind-mounted on /tmp by
 * setup_namespace), and every replica it had started then mounted a token directory the
 * next run could not see, and was restarted (ReplicaTokenFiles.mountedBy). An installation
 * that used the old default keeps it while that directory is there, since its running
 * replicas mount their tokens from it; the driver removes it at a stop that leaves it empty.
 */
export function stateDirectoryOf(
  loaded: Pick<LoadedPodmanSettings, 'stateDirectory' | 'instance' | 'environment'>,
  host: HostDirectories = hostDirectories(loaded.environment),
): string {
  if (loaded.stateDirectory !== null) return loaded.stateDirectory;
  const earlierDefault = legacyStateDirectory(loaded.instance, host);
  return host.exists(earlierDefault) ? earlierDefault : defaultStateDirectory(loaded.instance, host);
}

/** PODMAN_STATE_DIR's default on a host where no earlier default is in use. */
export function defaultStateDirectory(instance: string, host: Omit<HostDirectories, 'exists'>): string {
  const runtimeDirectory = host.root ? '/run' : host.userRuntimeDirectory ?? host.temporaryDirectory;
  return join(runtimeDirectory, `agent-platform-${instance}`);
}

/** Where the driver kept its files by default until 2026-11 ($TMPDIR). */
const legacyStateDirectory = (instance: string, host: Pick<HostDirectories, 'temporaryDirectory'>) =>
  join(host.temporaryDirectory, `agent-platform-${instance}`);

/**
 * Makes the driver's directory and proves it writable by writing a file in it, before the
 * driver starts, or throws a ConfigError naming PODMAN_STATE_DIR with the kernel's reason: a
 * service under systemd's ProtectSystem=strict, say, has /run read-only unless the unit
 * lists the directory in ReadWritePaths=. Made one level at a time, since Node's recursive
 * mkdir stats the path after an error it does not expect and reports that ENOENT instead
 * (nodejs/node, src/node_file.cc: MKDirpSync; seen: EROFS reported as ENOENT), and under
 * /proc it never returns.
 */
export function prepareStateDirectory(directory: string): void {
  const missing: string[] = [];
  for (let path = directory; !existsSync(path) && path !== dirname(path); path = dirname(path)) missing.unshift(path);
  try {
    for (const path of missing) mkdirSync(path, { mode: 0o755 });
    const probe = join(directory, `.writable-${process.pid}`);
    writeFileSync(probe, '');
    rmSync(probe);
  } catch (error) {
    const reason = (error as NodeJS.ErrnoException).code ?? String(error);
    throw new ConfigError([
      `PODMAN_STATE_DIR: the podman driver cannot write its files in ${directory} (${reason}); set it to a directory the control API may write that is the same at its next start (docs/orchestration.md, "Where the driver keeps its files")`,
    ]);
  }
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
