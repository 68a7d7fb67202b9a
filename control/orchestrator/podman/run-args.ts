import type { JobSpec } from '../types.js';
import type { PodmanSettings } from './settings.js';

/** podman's default capability set: what a replica may keep. */
export const DEFAULT_CAPABILITIES = [
  'CHOWN', 'DAC_OVERRIDE', 'FOWNER', 'FSETID', 'KILL', 'NET_BIND_SERVICE',
  'SETFCAP', 'SETGID', 'SETPCAP', 'SETUID', 'SYS_CHROOT',
] as const;

const ALL_CAPABILITIES = [
  'AUDIT_CONTROL', 'AUDIT_READ', 'AUDIT_WRITE', 'BLOCK_SUSPEND', 'BPF', 'CHECKPOINT_RESTORE', 'CHOWN',
  'DAC_OVERRIDE', 'DAC_READ_SEARCH', 'FOWNER', 'FSETID', 'IPC_LOCK', 'IPC_OWNER', 'KILL', 'LEASE',
  'LINUX_IMMUTABLE', 'MAC_ADMIN', 'MAC_OVERRIDE', 'MKNOD', 'NET_ADMIN', 'NET_BIND_SERVICE',
  'NET_BROADCAST', 'NET_RAW', 'PERFMON', 'SETFCAP', 'SETGID', 'SETPCAP', 'SETUID', 'SYSLOG',
  'SYS_ADMIN', 'SYS_BOOT', 'SYS_CHROOT', 'SYS_MODULE', 'SYS_NICE', 'SYS_PACCT', 'SYS_PTRACE',
  'SYS_RAWIO', 'SYS_RESOURCE', 'SYS_TIME', 'SYS_TTY_CONFIG', 'WAKE_ALARM',
] as const;

/**
 * Every capability outside the default set is dropped by name, so a host whose
 * containers.conf adds some (NET_RAW, MKNOD, AUDIT_WRITE were defaults once) cannot
 * widen it. The default set is not re-added with --cap-add: podman would then also
 * grant it to a non-root user, who otherwise runs with no effective capability.
 */
export const DROPPED_CAPABILITIES = ALL_CAPABILITIES.filter((cap) => !(DEFAULT_CAPABILITIES as readonly string[]).includes(cap));

export const LABEL = {
  /** Which platform installation owns the container; one host may run several (tests, `npm run up`). */
  instance: 'platform.instance',
  agentId: 'platform.agent-id',
  version: 'platform.version',
  replicaId: 'platform.replica-id',
} as const;

export const networkName = (agentId: string) => `agent-${agentId}`;

export interface ReplicaLaunch {
  replicaId: string;
  spec: JobSpec;
  /** A 0600 file with the single-line variables, so no value shows in `ps` or in podman's arguments. */
  envFile: string;
}

/**
 * How the environment reaches podman without a value on its command line: single-line
 * values through an env file; multi-line ones (a system prompt) by name only (`--env KEY`),
 * which podman fills from its own process environment.
 */
export function splitEnvironment(spec: JobSpec): { fileContent: string; inherited: Record<string, string> } {
  const lines: string[] = [];
  const inherited: Record<string, string> = {};
  for (const [key, value] of Object.entries({ ...spec.env, ...spec.secretEnv })) {
    if (/[\r\n]/.test(value)) inherited[key] = value;
    else lines.push(`${key}=${value}`);
  }
  return { fileContent: lines.join('\n'), inherited };
}

/**
 * The `podman run` arguments of one replica, with SPEC.md's container requirements:
 * no capability beyond the default set, no new privileges, 512 processes, the cpu and
 * memory limits and its agent's own network. No port is published on the host (a local
 * process could reach a private agent without its key): the edge connects to the
 * replica's address on the agent's network.
 */
export function runArguments({ replicaId, spec, envFile }: ReplicaLaunch, settings: PodmanSettings): string[] {
  return [
    'run', '--detach',
    '--name', replicaId,
    '--label', `${LABEL.instance}=${settings.instance}`,
    '--label', `${LABEL.agentId}=${spec.agentId}`,
    '--label', `${LABEL.version}=${spec.version}`,
    '--label', `${LABEL.replicaId}=${replicaId}`,
    '--network', networkName(spec.agentId),
    '--cap-drop', DROPPED_CAPABILITIES.join(','),
    '--security-opt', 'no-new-privileges',
    '--pids-limit', String(settings.pidsLimit),
    '--ulimit', `nproc=${settings.nprocLimit}:${settings.nprocLimit}`,
    '--ulimit', `nofile=${settings.nofileLimit}:${settings.nofileLimit}`,
    '--cpus', String(spec.cpu),
    '--memory', `${spec.memoryMb}m`,
    '--memory-swap', `${spec.memoryMb}m`,
    '--env-file', envFile,
    ...Object.keys(splitEnvironment(spec).inherited).flatMap((key) => ['--env', key]),
    '--stop-timeout', String(settings.stopTimeoutSeconds),
    '--log-driver', 'k8s-file',
    '--pull', 'missing',
    spec.image,
  ];
}
