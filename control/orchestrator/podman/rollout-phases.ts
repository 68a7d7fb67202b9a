import type { RolloutProgress } from '../../domain/job.js';
import { stableBeside, type ReplicaEvent, type ReplicaJob } from './replica-state.js';

/**
 * Which of a job's events is which step of a rollout, in the one place every event passes
 * (JobTable.record). The image step comes first, then for each new replica: its container
 * being created, then running while its port is probed, then routed; last, the replicas of
 * older versions taken out of routing and stopped. Exits, failures, adoption and scaling
 * are no step: the platform decides a rollout's end from the job's status.
 *
 * A canary (JobSpec.stable) goes through the same steps, each said to be the canary's; the
 * stable replicas beside it are no step of it, and an aborted canary's replicas stopping
 * is the last step of its own version.
 */
const PHASE_OF: Readonly<Record<string, RolloutProgress['phase']>> = {
  pulling: 'pulling',
  creating: 'starting',
  started: 'health_check',
  ready: 'routing',
  stopping: 'draining',
};

/** The rollout step `event` is, for the version it belongs to; null when it is none. */
export function progressOf(job: ReplicaJob, event: ReplicaEvent, at: Date): RolloutProgress | null {
  const phase = PHASE_OF[event.type];
  if (!phase) return null;
  const rolledOut = job.spec.version;
  const stable = stableBeside(job.spec);
  const replicaVersion = (event.replicaId ? job.replicas.get(event.replicaId)?.spec.version : undefined) ?? rolledOut;
  const message = stable && replicaVersion === rolledOut ? `canary: ${event.message}` : event.message;
  const base = { agentId: job.spec.agentId, phase, replicaId: event.replicaId, message, at };
  if (phase !== 'draining') return { ...base, version: replicaVersion };
  // Stable replicas stopping beside a canary (a scale of it, a crashed one replaced) are no step of the canary.
  if (replicaVersion === stable?.version) return null;
  // A replica of an older version stopping is the rollout's drain; one of a newer version is an aborted canary's
  // last step; one of the current version stopping is a scale-down.
  if (replicaVersion < rolledOut) return { ...base, version: rolledOut };
  return replicaVersion > rolledOut ? { ...base, version: replicaVersion } : null;
}
