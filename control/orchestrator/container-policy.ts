/**
 * What an agent's container may do, whichever driver runs it (the container
 * requirements of docs/contract.md): podman's default capabilities and nothing more, no new privileges, and
 * a cap on processes. The podman driver turns it into `podman run` flags (podman/run-args.ts),
 * the Nomad driver into the docker task's config (nomad/job-spec.ts).
 */

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
 * Every capability outside the default set, for a runtime that must drop them by name:
 * a host whose containers.conf adds some (NET_RAW, MKNOD, AUDIT_WRITE were defaults once)
 * cannot widen the set.
 */
export const DROPPED_CAPABILITIES = ALL_CAPABILITIES.filter((cap) => !(DEFAULT_CAPABILITIES as readonly string[]).includes(cap));

/** The security option that keeps a process from gaining privileges (setuid binaries, file capabilities). */
export const NO_NEW_PRIVILEGES = 'no-new-privileges';

/** Processes (the pids cgroup) per container: a fork bomb stops there and the host stays manageable. */
export const PIDS_LIMIT = 512;
