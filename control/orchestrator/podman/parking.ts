import { stableBeside, type ReplicaEvent, type ReplicaJob, type ReplicaRecord } from './replica-state.js';

/**
 * Warm and cold parking (issue 40, docs/scaling.md "Warm and cold parking"): what becomes
 * of a parked agent's replica. When the platform parks an agent (a count of 0 with
 * JobSpec.parked), one running replica of its version is kept out of routing instead of
 * removed: frozen (`podman pause`, the cgroup freezer: no CPU, its memory and in-memory
 * sessions intact) until `parked.warmUntil`, then stopped (no process, no memory; the
 * container kept, so a wake is a `podman start` and not a create). A wake thaws it, routable
 * at once since its state is intact, or starts it, routable once its port opens. Like
 * replica-state.ts: no podman, no timer, no I/O; the supervisor does what this says.
 */

export type ParkingMode = 'warm' | 'cold';

/** The replica a parked job keeps, out of `job.replicas`: no status lists it, no meter counts it, no edge routes to it. */
export interface ParkedReplica {
  record: ReplicaRecord;
  mode: ParkingMode;
  /**
   * Out of routing, still running: its drain period (DRAIN_SECONDS) for a request already on
   * its way, before it is frozen or stopped. A wake meanwhile routes it again as it is.
   */
  draining: boolean;
  /**
   * Its stop (a cold park's, or the end of its warm period) runs: SIGTERM, then up to
   * STOP_TIMEOUT_SECONDS. A wake meanwhile starts it once it has stopped; a discard removes
   * it then. Neither meets a container half stopped.
   */
  stopping: boolean;
}

export interface ParkingJob extends ReplicaJob {
  parked: ParkedReplica | null;
}

/** What the supervisor does about a job's parked replica before converging it. */
export type ParkingStep =
  | { step: 'none' }
  /** Take `record` out of routing and freeze it (warm) or stop it (cold). */
  | { step: 'park'; record: ReplicaRecord; mode: ParkingMode }
  /** Its warm period is over: stop the frozen replica. */
  | { step: 'cool' }
  /** A wake: thaw (warm) or start (cold) the parked replica, or route a draining one again as it is. */
  | { step: 'resume' }
  /** The parked replica is no longer the job's (a redeploy, its owner's scale to 0, a canary): remove it. */
  | { step: 'discard' };

const NONE: ParkingStep = { step: 'none' };

/** How a replica parked now is kept: warm while its warm period lasts. */
export const modeAt = (warmUntil: Date | null, nowMs: number): ParkingMode =>
  warmUntil !== null && warmUntil.getTime() > nowMs ? 'warm' : 'cold';

/**
 * The next parking step of a job. A job is parked while its spec has `parked` at a count of
 * 0, with no canary. A parked replica is resumed only for its own version: a redeploy while
 * parked discards it, and the plan starts the new version as usual.
 */
export function parkingStep(job: ParkingJob, nowMs: number): ParkingStep {
  const { spec, parked } = job;
  const parking = spec.parked && spec.count === 0 && !stableBeside(spec) ? spec.parked : null;
  if (parked) {
    const sameVersion = parked.record.spec.version === spec.version && !stableBeside(spec);
    if (spec.count > 0 && sameVersion) return { step: 'resume' };
    if (!parking || !sameVersion) return { step: 'discard' };
    return parked.mode === 'warm' && !parked.draining && !parked.stopping && modeAt(parking.warmUntil, nowMs) === 'cold' ? { step: 'cool' } : NONE;
  }
  if (!parking) return NONE;
  const candidate = [...job.replicas.values()].find((r) => r.state === 'running' && !r.busy && r.spec.version === spec.version);
  return candidate ? { step: 'park', record: candidate, mode: modeAt(parking.warmUntil, nowMs) } : NONE;
}

/**
 * A container found paused, or stopped while its job is parked, with no record (after a
 * restart of the control API): it is the job's parked replica, warm if paused. Whether it
 * stays parked, is woken or goes is the next `parkingStep`'s decision.
 */
export function adoptsAsParked(job: ParkingJob, container: { state: string }): ParkingMode | null {
  if (job.parked) return null;
  if (container.state === 'paused') return 'warm';
  return container.state === 'exited' && job.spec.parked && job.spec.count === 0 ? 'cold' : null;
}

export const parkedEvent = (record: ReplicaRecord, mode: ParkingMode, warmUntil: Date | null): ReplicaEvent => ({
  replicaId: record.id,
  type: 'parked',
  message: mode === 'warm' ? `frozen in memory (warm) until ${warmUntil?.toISOString()}` : 'stopped (cold): a wake starts it again',
});

export const cooledEvent = (record: ReplicaRecord): ReplicaEvent => ({
  replicaId: record.id,
  type: 'parked',
  message: 'warm period over: stopped (cold)',
});

export const resumedEvent = (record: ReplicaRecord, mode: ParkingMode): ReplicaEvent => ({
  replicaId: record.id,
  type: 'woken',
  message: mode === 'warm' ? 'thawed: routable with its memory intact' : 'started again from its stopped container',
});

export const takenBackEvent = (record: ReplicaRecord): ReplicaEvent => ({
  replicaId: record.id,
  type: 'woken',
  message: 'woken during its drain period: routed again, never frozen or stopped',
});
