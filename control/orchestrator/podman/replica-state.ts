import { backoffMs, NO_JITTER } from '../../../contract/backoff.js';
import type { JobSpec, Replica, ReplicaState } from '../../domain/job.js';

/**
 * The podman driver's replica state machine: what a replica becomes after what a poll saw
 * of its container, and what a job needs next (start, stop the surplus, retire an older
 * version). No podman, no timer, no I/O: the supervisor (supervisor.ts) looks, asks this
 * module, and does what it says.
 */

export interface ReplicaRecord {
  id: string;
  spec: JobSpec;
  state: ReplicaState;
  address: string | null;
  /** The container start `address` was read for (ps's StartedAt). */
  addressOf: number | null;
  restarts: number;
  /** Epoch milliseconds from which a `restarting` replica is started again. */
  restartAt: number;
  startedAt: Date | null;
  error: string | null;
  /** A podman command for this replica is in flight; polls leave it alone. */
  busy: boolean;
}

/** What one agent wants (spec) and the replicas that serve it, of any version. */
export interface ReplicaJob {
  spec: JobSpec;
  replicas: Map<string, ReplicaRecord>;
}

/** Something that happened to a job, for its events and the log; the supervisor stamps the time. */
export interface ReplicaEvent {
  replicaId: string | null;
  type: string;
  message: string;
}

export interface RestartPolicy {
  /** A replica that never accepts connections joins the routing set after this (so the edge answers 502, not 503). */
  startGraceMs: number;
  /** Restarts allowed before a replica is `crashed`. */
  restartBudget: number;
  restartBackoffBaseMs: number;
  restartBackoffMaxMs: number;
}

/** A replica's container as a poll saw it. `portOpen`: its port accepted a connection from the host. */
export type Sighting = { container: 'running'; portOpen: boolean } | { container: 'exited'; exitCode: number } | { container: 'missing' };

/** What the supervisor does for a replica after a sighting: nothing, or start it again (its container exists or must be created). */
export type Next = { restart: false } | { restart: true; containerExists: boolean };

const NOTHING: Next = { restart: false };

/** Failed, crashed or stopping: no poll changes it any more, only a new deploy or its removal does. */
export const isSettled = (record: ReplicaRecord) => record.state === 'failed' || record.state === 'crashed' || record.state === 'stopping';

/** A new replica of the job's spec; busy while its container is being created. */
export const newReplica = (id: string, spec: JobSpec): ReplicaRecord => ({
  id,
  spec,
  state: 'pending',
  address: null,
  addressOf: null,
  restarts: 0,
  restartAt: 0,
  startedAt: null,
  error: null,
  busy: true,
});

/**
 * A container of this installation found with no record (after a restart of the control
 * API): taken over at the version its label says, routed once it proves ready again.
 */
export function adoptedReplica(
  spec: JobSpec,
  container: { id: string; state: string; version: number },
  now: Date,
): { record: ReplicaRecord; event: ReplicaEvent } {
  const record: ReplicaRecord = {
    ...newReplica(container.id, { ...spec, version: container.version }),
    state: container.state === 'running' ? 'starting' : 'restarting',
    startedAt: now,
    busy: false,
  };
  return { record, event: { replicaId: container.id, type: 'adopted', message: `found ${container.state} container of version ${container.version}` } };
}

/**
 * Applies a sighting of an unsettled replica. A running container is routed once its port
 * opens or its start grace is over; one that ran and stopped counts an exit and waits out
 * an exponential backoff, or is `crashed` past the restart budget; a `restarting` one is
 * started again once its backoff is over.
 */
export function observe(record: ReplicaRecord, sighting: Sighting, nowMs: number, policy: RestartPolicy): { next: Next; events: ReplicaEvent[] } {
  if (sighting.container === 'running') {
    if (record.state === 'running') return { next: NOTHING, events: [] };
    const graceOver = nowMs - (record.startedAt?.getTime() ?? nowMs) >= policy.startGraceMs;
    if (sighting.portOpen || graceOver) {
      record.state = 'running';
      const message = graceOver ? 'start grace period over: routed without a listening port' : 'port accepts connections';
      return { next: NOTHING, events: [{ replicaId: record.id, type: 'ready', message }] };
    }
    record.state = 'starting';
    return { next: NOTHING, events: [] };
  }
  const containerExists = sighting.container === 'exited';
  if (record.state === 'restarting') {
    return { next: nowMs >= record.restartAt ? { restart: true, containerExists } : NOTHING, events: [] };
  }
  // It ran and now it does not: count the exit, then wait out the backoff or give up.
  record.restarts += 1;
  record.address = null;
  record.addressOf = null;
  const reason = sighting.container === 'exited' ? `exited with code ${sighting.exitCode}` : 'container disappeared';
  if (record.restarts > policy.restartBudget) {
    record.state = 'crashed';
    record.error = `${reason}; restarted ${policy.restartBudget} times`;
    return { next: NOTHING, events: [{ replicaId: record.id, type: 'crashed', message: record.error }] };
  }
  record.state = 'restarting';
  record.restartAt = nowMs + restartDelayMs(record.restarts, policy);
  return { next: NOTHING, events: [{ replicaId: record.id, type: 'exited', message: `${reason}; restart ${record.restarts} of ${policy.restartBudget} after backoff` }] };
}

/**
 * The wait before the `restarts`-th restart: the base, doubled at each exit, capped. Not
 * jittered: the restart schedule is the documented one (docs/orchestration.md), and a
 * restart starts a container on this host rather than calling a shared server.
 */
export const restartDelayMs = (restarts: number, policy: RestartPolicy) =>
  backoffMs({ baseMs: policy.restartBackoffBaseMs, maxMs: policy.restartBackoffMaxMs }, restarts, NO_JITTER);

/**
 * Its container died, as podman's event said ahead of the next poll: out of routing at
 * once. The poll that sees the exit counts it and decides the restart, as ever. `addressOf`
 * stays, so a poll listed before the death cannot read the address back. A death from
 * before the replica's latest start (an event late past a restart) changes nothing.
 * True when the replica left routing.
 */
export function died(record: ReplicaRecord, at: Date): boolean {
  if (record.address === null || (record.startedAt !== null && at < record.startedAt)) return false;
  record.address = null;
  return true;
}

/** Its container runs again (a restart): routed once it proves ready, as at first. */
export function restarted(record: ReplicaRecord, now: Date): void {
  record.state = 'starting';
  record.startedAt = now;
}

/** The image step of a version about to get replicas: `ready` when the image is here, otherwise a pull starts or runs. */
export const imageStep = (spec: JobSpec, ready: boolean): ReplicaEvent => ({
  replicaId: null,
  type: 'pulling',
  message: ready ? `image ${spec.image} is present` : `pulling image ${spec.image}`,
});

/** A new replica's container is being created. */
export const creating = (record: ReplicaRecord): ReplicaEvent => ({
  replicaId: record.id,
  type: 'creating',
  message: `creating container from ${record.spec.image}`,
});

/** A new replica's container runs. */
export function launched(record: ReplicaRecord, now: Date): ReplicaEvent {
  restarted(record, now);
  return { replicaId: record.id, type: 'started', message: `container started from ${record.spec.image}` };
}

/** Its container could not be created or started (image, network, runtime): not retried until the next deploy. */
export function failed(record: ReplicaRecord, reason: string): ReplicaEvent {
  record.state = 'failed';
  record.error = reason;
  return { replicaId: record.id, type: 'failed', message: reason };
}

/**
 * The version serving beside the job's while a canary runs (JobSpec.stable); none
 * otherwise. A `stable` that is not older than the canary names no previous version, so
 * it is no canary (the driver refuses such a spec at submit).
 */
export const stableBeside = (spec: JobSpec): JobSpec | undefined =>
  spec.stable && spec.stable.version < spec.version ? spec.stable : undefined;

/**
 * The spec a replica of `version` runs: the stable's while a canary runs beside it,
 * otherwise the job's under that version (an older one only waits to be replaced). A
 * restart whose container vanished creates it again from this spec, so a stable replica
 * must keep the stable's image and environment.
 */
export function specOfVersion(spec: JobSpec, version: number): JobSpec {
  const stable = stableBeside(spec);
  if (stable && stable.version === version) return stable;
  return version === spec.version ? spec : { ...spec, version };
}

/** What a job needs after its replicas were observed. */
export interface JobPlan {
  /** Replicas of the job's version (the canary's, while one runs) to start. */
  launch: number;
  /** Replicas of the job's version, or of the stable one, past their count, to stop: those doing the least good. */
  surplus: ReplicaRecord[];
  /** Replicas of other older versions, to stop: the job's version is fully up (or asked to be 0). */
  replaced: ReplicaRecord[];
  /** While a canary runs: replicas of the stable version to start (from JobSpec.stable), to keep it at its count. */
  launchStable: number;
  /** While a canary runs: stable replicas crashed past their restart budget, to stop; `launchStable` counts their replacements. */
  crashedStable: ReplicaRecord[];
  /** Replicas of versions newer than the job's: an aborted canary's, to stop at once (the edge no longer sends them requests). */
  aborted: ReplicaRecord[];
}

/** Which replicas go first when scaling down: those doing the least good (a stable sort keeps the oldest first among equals). */
const STOP_ORDER: ReplicaState[] = ['failed', 'crashed', 'pending', 'restarting', 'starting', 'stopping', 'running'];

/**
 * Of two replicas in one state, one out of routing goes first: a running replica whose
 * container died, as podman's event said (died), before a look counted the exit. A scale
 * plans without a look (Supervisor.converged), so its records may not show the exit yet.
 */
const byStopOrder = (a: ReplicaRecord, b: ReplicaRecord) =>
  STOP_ORDER.indexOf(a.state) - STOP_ORDER.indexOf(b.state) || Number(a.address !== null) - Number(b.address !== null);

/**
 * What one version's replicas need to be `count`: how many to start, and which are past
 * the count. A version whose replicas cannot start (bad image) or keep crashing is not
 * relaunched until the next deploy: replacing them would only repeat the failure forever.
 * `replaceCrashed` (the stable version beside a canary) makes an exception of crashed
 * replicas: that version has served, so they are stopped and started afresh, to keep it at
 * its count while the canary is judged against it. A failed one still holds launches back,
 * as its start failed (image, network) and a new one would fail at every tick.
 */
function versionNeeds(replicas: ReplicaRecord[], count: number, replaceCrashed: boolean) {
  const crashed = replaceCrashed ? replicas.filter((r) => r.state === 'crashed') : [];
  const live = replicas.filter((r) => r.state !== 'failed' && r.state !== 'crashed');
  const dead = replicas.length - live.length - crashed.length;
  const launch = live.length < count && dead === 0 ? count - live.length : 0;
  const surplus = live.length > count ? [...live].sort(byStopOrder).slice(0, live.length - count) : [];
  return { launch, surplus, crashed };
}

/**
 * What a job needs next. Its version's replicas are kept at its count; while a canary runs
 * (JobSpec.stable) the stable version's replicas too, at the stable's count. Other older
 * versions are replaced health-gated: once the job's version is fully up (or asked to be
 * 0). Newer versions stop at once: the job went back to the version a canary ran beside
 * (an abort), so no one waits for them.
 */
export function plan(job: ReplicaJob): JobPlan {
  const { version, count } = job.spec;
  const stable = stableBeside(job.spec);
  const replicas = [...job.replicas.values()].filter((r) => r.state !== 'stopping');
  const current = replicas.filter((r) => r.spec.version === version);
  const currentNeeds = versionNeeds(current, count, false);
  const stableNeeds = stable ? versionNeeds(replicas.filter((r) => r.spec.version === stable.version), stable.count, true) : null;
  const others = replicas.filter((r) => r.spec.version !== version && r.spec.version !== stable?.version);
  const older = others.filter((r) => r.spec.version < version);
  const ready = current.filter((r) => r.state === 'running').length;
  return {
    launch: currentNeeds.launch,
    surplus: [...currentNeeds.surplus, ...(stableNeeds?.surplus ?? [])],
    replaced: older.length > 0 && (ready >= count || count === 0) ? older : [],
    launchStable: stableNeeds?.launch ?? 0,
    crashedStable: stableNeeds?.crashed ?? [],
    aborted: others.filter((r) => r.spec.version > version),
  };
}

/**
 * Takes replicas out of routing before their containers go. `drain`: one of them was
 * routed, so requests in flight get the drain period before the containers stop.
 */
export function stopping(records: ReplicaRecord[], why: string): { drain: boolean; events: ReplicaEvent[] } {
  const drain = records.some((r) => r.state === 'running');
  for (const record of records) {
    record.state = 'stopping';
    record.address = null;
    record.addressOf = null;
  }
  return { drain, events: records.map((r) => ({ replicaId: r.id, type: 'stopping', message: why })) };
}

/** Changes when anything a listener routes by changed: a replica's presence, state, address or restarts, or the count. */
export const fingerprint = (job: ReplicaJob) =>
  [...job.replicas.values()].map((r) => `${r.id}:${r.state}:${r.address}:${r.restarts}`).join('|') + `#${job.spec.count}`;

export const toReplica = (record: ReplicaRecord): Replica => ({
  id: record.id,
  version: record.spec.version,
  state: record.state,
  address: record.address,
  restarts: record.restarts,
  startedAt: record.startedAt,
  error: record.error,
});
