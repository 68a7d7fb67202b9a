import type { JobStatus } from './job.js';

export type RolloutOutcome = { status: 'succeeded'; message: string } | { status: 'failed'; error: string };

/**
 * How many replicas a finished rollout runs: exactly the desired count, or, for an
 * auto-scaled agent, any count within its bounds. On Nomad the Nomad Autoscaler owns the
 * count and a redeploy keeps it (the driver registers with PreserveCounts), so the
 * platform's desired_replicas need not be what Nomad runs.
 */
export type ReplicaTarget = number | { min: number; max: number };

/**
 * How the rollout of `version` ended, from its job's status, the same way for both drivers;
 * null while it goes on (or while the job still runs an older version: the new one is not
 * submitted yet).
 *
 * - `failed` as soon as a replica of the version could not start (`failed`: image, runtime)
 *   or used up its restarts (`crashed`): neither driver places another one of that version
 *   until the next deploy (podman's replica-state.ts `plan`; Nomad's reschedule policy has
 *   no attempts), and the health-gated rollout keeps the older replicas serving.
 * - `succeeded` once the target's replicas run (at least one), all of this version: no
 *   replica of an older version remains, not even one draining.
 */
export function rolloutOutcome(job: JobStatus | null, target: ReplicaTarget, version: number): RolloutOutcome | null {
  if (!job || job.version !== version) return null;
  const current = job.replicas.filter((replica) => replica.version === version);
  const dead = current.find((replica) => replica.state === 'failed' || replica.state === 'crashed');
  if (dead) return { status: 'failed', error: dead.error ?? `replica ${dead.id} ${dead.state}` };
  const { min, max } = typeof target === 'number' ? { min: target, max: target } : target;
  const count = current.length;
  const settled = job.replicas.length === count && count >= Math.max(min, 1) && count <= max && current.every((replica) => replica.state === 'running');
  if (!settled) return null;
  return { status: 'succeeded', message: `${count} replica(s) of version ${version} running; no older replica left` };
}
