/** What the scaler knows of one auto-scaled agent at one pass. */
export interface AutoscaleSignals {
  /** Replicas the agent is set to run (desired_replicas). */
  current: number;
  min: number;
  max: number;
  /** Requests the edge counted for the agent in the last complete one-minute window. */
  requestsLastMinute: number;
  /** Mean CPU percent across running replicas; null when no replica reported any. */
  cpuPercent: number | null;
  /** When the count last changed (by the scaler or by hand); null when not known. */
  lastScaleAt: Date | null;
  now: Date;
}

export interface AutoscaleTargets {
  rpmPerReplica: number;
  cpuPercent: number;
  cooldownMs: number;
}

export type AutoscaleReason =
  | 'below_min' // outside the bounds: moved back at once
  | 'above_max'
  | 'load' // scale out: requests or CPU above target
  | 'idle' // scale in by one: both signals leave room
  | 'cooling_down' // a change is wanted but the last one is too recent
  | 'steady';

export interface AutoscaleDecision {
  desired: number;
  reason: AutoscaleReason;
}

/**
 * How many replicas one agent should run. The wanted count is the larger of what the
 * request rate and the CPU ask for, within min..max. Scale-out goes straight to the wanted
 * count; scale-in goes one replica at a time, so a dip in load never drops several
 * replicas at once. Either waits for the cool-down after the last change: new replicas
 * need time to start and take load before the signals reflect them. Bounds are restored
 * at once, cool-down or not.
 */
export function decideReplicas(signals: AutoscaleSignals, targets: AutoscaleTargets): AutoscaleDecision {
  const { current, max } = signals;
  // Load never takes an agent below one replica: 0 (min_replicas 0) is parking, decided by
  // the edge's idleness (control/domain/scale-to-zero.ts), not by a quiet minute or low CPU.
  const min = Math.max(signals.min, 1);
  if (current < min) return { desired: min, reason: 'below_min' };
  if (current > max) return { desired: max, reason: 'above_max' };

  const wanted = clamp(Math.max(byRequests(signals, targets), byCpu(signals, targets)), min, max);
  if (wanted === current) return { desired: current, reason: 'steady' };
  if (coolingDown(signals, targets)) return { desired: current, reason: 'cooling_down' };
  if (wanted > current) return { desired: wanted, reason: 'load' };
  return { desired: current - 1, reason: 'idle' };
}

/** Replicas the last minute's requests need at the target rate per replica. */
const byRequests = (signals: AutoscaleSignals, targets: AutoscaleTargets) =>
  Math.ceil(signals.requestsLastMinute / targets.rpmPerReplica);

/** Replicas that would bring the mean CPU to the target, assuming load spreads evenly. */
function byCpu(signals: AutoscaleSignals, targets: AutoscaleTargets): number {
  if (signals.cpuPercent === null || signals.current === 0) return 0;
  // A hair of tolerance so that CPU exactly at the target does not ask for another replica.
  return Math.ceil((signals.current * signals.cpuPercent) / targets.cpuPercent - 1e-9);
}

function coolingDown(signals: AutoscaleSignals, targets: AutoscaleTargets): boolean {
  if (signals.lastScaleAt === null) return false;
  return signals.now.getTime() - signals.lastScaleAt.getTime() < targets.cooldownMs;
}

const clamp = (value: number, min: number, max: number) => Math.min(max, Math.max(min, value));
