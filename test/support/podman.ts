import { execFileSync } from 'node:child_process';

/** Runs podman as the platform does (same OCI runtime), returning its stdout. */
export function podman(args: string[], runtime: string | null = 'runc'): string {
  return execFileSync('podman', [...(runtime ? ['--runtime', runtime] : []), ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

/** Names of the containers of one agent, whatever their state. */
export function containersOf(agentId: string): string[] {
  return podman(['ps', '--all', '--filter', `label=platform.agent-id=${agentId}`, '--format', '{{.Names}}']).split('\n').filter(Boolean);
}

/** Names of the containers of one agent whose processes run (or are frozen): not exited, not created. */
export function runningContainersOf(agentId: string): string[] {
  return podman(['ps', '--filter', `label=platform.agent-id=${agentId}`, '--format', '{{.Names}}']).split('\n').filter(Boolean);
}

/** Each container of one agent with its state and labels' replica, for a failure message. */
export function podmanStates(agentId: string): string {
  return podman(['ps', '--all', '--filter', `label=platform.agent-id=${agentId}`, '--format', '{{.Names}} {{.State}} {{.Status}} {{.Labels}}']).trim() || '(none)';
}

export function networkExists(name: string): boolean {
  try {
    podman(['network', 'exists', name]);
    return true;
  } catch {
    return false;
  }
}
