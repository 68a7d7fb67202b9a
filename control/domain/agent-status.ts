import type { AgentStatus } from './agent.js';
import type { JobStatus } from './job.js';

export interface ObservedState {
  status: AgentStatus;
  /** Replicas that are up: running and routable. */
  replicas: number;
  error: string | null;
}

/**
 * An agent's state from its job (docs/orchestration.md, "States"): `running` as soon as one replica of any
 * version is up; `scaling` from a scale request (`previous`) until the current version
 * has exactly the replicas asked for; `failed` when the current version cannot start;
 * `crashed` when all of its replicas used up their restarts; `pending` before anything
 * is placed and `starting` before anything is up. A `parked` agent (0 replicas because it
 * was idle) stays `running`.
 */
export function observedState(desiredReplicas: number, job: JobStatus | null, previous: AgentStatus, parked = false): ObservedState {
  // Parked by the platform for want of requests: ready, and woken by the next one (docs/autoscaling.md, "Scale to zero").
  if (desiredReplicas === 0 && parked) return { status: 'running', replicas: (job?.replicas ?? []).filter((r) => r.state === 'running').length, error: null };
  if (desiredReplicas === 0 && (!job || job.replicas.length === 0)) return { status: 'stopped', replicas: 0, error: null };
  if (!job) return { status: 'pending', replicas: 0, error: null };

  const current = job.replicas.filter((r) => r.version === job.version);
  const up = job.replicas.filter((r) => r.state === 'running').length;
  const currentUp = current.filter((r) => r.state === 'running').length;
  const failed = current.find((r) => r.state === 'failed');
  const crashed = current.filter((r) => r.state === 'crashed');

  if (failed && currentUp === 0) {
    const error = up > 0 ? `${failed.error} (the previous version still serves)` : failed.error;
    return { status: 'failed', replicas: up, error };
  }
  if (desiredReplicas > 0 && crashed.length > 0 && crashed.length >= current.length && up === 0) {
    return { status: 'crashed', replicas: 0, error: crashed[0]!.error };
  }
  const settled = currentUp === desiredReplicas && job.replicas.length === desiredReplicas;
  if (desiredReplicas === 0) return { status: settled ? 'stopped' : 'scaling', replicas: up, error: null };
  if (up === 0) {
    const placed = job.replicas.some((r) => r.state === 'starting' || r.state === 'restarting');
    return { status: placed ? 'starting' : 'pending', replicas: 0, error: null };
  }
  return { status: previous === 'scaling' && !settled ? 'scaling' : 'running', replicas: up, error: null };
}
