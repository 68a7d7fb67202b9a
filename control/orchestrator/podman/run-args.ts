import { DROPPED_CAPABILITIES, NO_NEW_PRIVILEGES, PIDS_LIMIT } from '../container-policy.js';
import type { JobSpec } from '../../domain/job.js';
import { TOKEN_MOUNT } from './replica-tokens.js';
import type { PodmanSettings } from './settings.js';

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
  /** The host directory holding the replica's agent services token (replica-tokens.ts), mounted read-only; null when agent services are off. */
  tokenDirectory?: string | null;
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
 * The `podman run` arguments of one replica, with the container requirements of docs/contract.md:
 * no capability beyond the default set, no new privileges, 512 processes, the cpu and
 * memory limits and its agent's own network. No port is published on the host (a local
 * process could reach a private agent without its key): the edge connects to the
 * replica's address on the agent's network.
 */
export function runArguments({ replicaId, spec, envFile, tokenDirectory = null }: ReplicaLaunch, settings: PodmanSettings): string[] {
  return [
    'run', '--detach',
    '--name', replicaId,
    '--label', `${LABEL.instance}=${settings.instance}`,
    '--label', `${LABEL.agentId}=${spec.agentId}`,
    '--label', `${LABEL.version}=${spec.version}`,
    '--label', `${LABEL.replicaId}=${replicaId}`,
    '--network', networkName(spec.agentId),
    // Dropped by name, not `--cap-drop ALL` plus the defaults re-added with --cap-add:
    // podman would then also grant them to a non-root user, who otherwise runs with no
    // effective capability.
    '--cap-drop', DROPPED_CAPABILITIES.join(','),
    '--security-opt', NO_NEW_PRIVILEGES,
    '--pids-limit', String(PIDS_LIMIT),
    '--ulimit', `nproc=${settings.nprocLimit}:${settings.nprocLimit}`,
    '--ulimit', `nofile=${settings.nofileLimit}:${settings.nofileLimit}`,
    '--cpus', String(spec.cpu),
    '--memory', `${spec.memoryMb}m`,
    '--memory-swap', `${spec.memoryMb}m`,
    '--env-file', envFile,
    ...(tokenDirectory ? ['--mount', tokenMount(tokenDirectory)] : []),
    ...Object.keys(splitEnvironment(spec).inherited).flatMap((key) => ['--env', key]),
    '--stop-timeout', String(settings.stopTimeoutSeconds),
    '--log-driver', 'k8s-file',
    // Pulled before any replica starts, with the agent's own credentials (image-pulls.ts): a
    // run that pulled by itself would use the host's, the operator's, credentials.
    '--pull', 'never',
    spec.image,
  ];
}

/**
 * The token directory, read-only, relabelled for this container alone. On an SELinux host a
 * confined container (container_t) may read only files labelled for containers, and the
 * directory is under /run (var_run_t): without the relabel the replica cannot read its token.
 * `relabel=private` is `:Z` (containers/podman, pkg/specgenutil/volumes.go, the mount option
 * parser): podman labels the directory with this container's own categories when it creates
 * the container, and does nothing where SELinux is off (libpod/container_internal_common.go,
 * `(*Container).relabel`). The token files rewritten into it later take the directory's type
 * and the control API's level, s0, which every container's categories dominate: readable.
 */
function tokenMount(tokenDirectory: string): string {
  return `type=bind,source=${tokenDirectory},destination=${TOKEN_MOUNT},ro=true,relabel=private`;
}
