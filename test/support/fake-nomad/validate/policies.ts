import { goDuration as d, goQuote, goQuoteList } from './go-format.js';
import { MultiError } from './multierror.js';

/**
 * A task group's policy blocks, each checked as nomad/structs/structs.go checks it: the
 * restart, reschedule, update and migrate strategies and the scaling policy.
 */
type Json = Record<string, any>;

const SECOND = 1_000_000_000;

/** nomad/structs/structs.go, `RestartPolicy.Validate` (`RestartPolicyMinInterval` is 5s). */
export function validateRestartPolicy(r: Json): MultiError | null {
  const errors = new MultiError();
  if (r.Mode !== 'delay' && r.Mode !== 'fail') errors.append(`Unsupported restart mode: ${goQuote(r.Mode)}`);
  if (r.Attempts === 0 && r.Mode !== 'fail') errors.append(`Restart policy ${goQuote(r.Mode)} with ${r.Attempts} attempts is ambiguous`);
  if (r.Interval < 5 * SECOND) errors.append(`Interval can not be less than ${d(5 * SECOND)} (got ${d(r.Interval)})`);
  if (r.Attempts * r.Delay > r.Interval) {
    errors.append(`Nomad can't restart the TaskGroup ${r.Attempts} times in an interval of ${d(r.Interval)} with a delay of ${d(r.Delay)}`);
  }
  return errors.orNil();
}

const DELAY_FUNCTIONS = ['constant', 'exponential', 'fibonacci'];
const MIN_DELAY = 5 * SECOND;
const MIN_INTERVAL = 15 * SECOND;

/**
 * nomad/structs/structs.go, `ReschedulePolicy.Validate`: only an enabled policy
 * (attempts > 0 or unlimited) is checked.
 */
export function validateReschedulePolicy(r: Json): MultiError | null {
  if (!(r.Attempts > 0 || r.Unlimited)) return null;
  const errors = new MultiError();
  if (r.Attempts > 0) {
    if (r.Interval <= 0) errors.append('Interval must be a non zero value if Attempts > 0');
    if (r.Unlimited) {
      errors.append(`Reschedule Policy with Attempts = ${r.Attempts}, Interval = ${d(r.Interval)}, and Unlimited = ${r.Unlimited} is ambiguous`);
      errors.append('If Attempts >0, Unlimited cannot also be set to true');
    }
  }
  let delayPreCheck = true;
  if (r.Delay < MIN_DELAY) {
    errors.append(`Delay cannot be less than ${d(MIN_DELAY)} (got ${d(r.Delay)})`);
    delayPreCheck = false;
  }
  if (!DELAY_FUNCTIONS.includes(r.DelayFunction)) {
    errors.append(`Invalid delay function ${goQuote(r.DelayFunction)}, must be one of ${goQuoteList(DELAY_FUNCTIONS)}`);
    delayPreCheck = false;
  }
  if (r.DelayFunction !== 'constant') {
    // Nomad prints the Delay here, not the MaxDelay it checks.
    if (r.MaxDelay < MIN_DELAY) {
      errors.append(`Max Delay cannot be less than ${d(MIN_DELAY)} (got ${d(r.Delay)})`);
      delayPreCheck = false;
    }
    if (r.MaxDelay < r.Delay) {
      errors.append(`Max Delay cannot be less than Delay ${d(r.Delay)} (got ${d(r.MaxDelay)})`);
      delayPreCheck = false;
    }
  }
  if (!r.Unlimited) {
    if (r.Interval < MIN_INTERVAL) errors.append(`Interval cannot be less than ${d(MIN_INTERVAL)} (got ${d(r.Interval)})`);
    if (!delayPreCheck) return errors.orNil();
    errors.append(validateDelayParams(r));
  }
  return errors.orNil();
}

/** nomad/structs/structs.go, `ReschedulePolicy.validateDelayParams`. */
function validateDelayParams(r: Json): MultiError | null {
  const [ok, possibleAttempts, recommendedInterval] = viableAttempts(r);
  if (ok) return null;
  const errors = new MultiError();
  if (r.DelayFunction === 'constant') {
    errors.append(`Nomad can only make ${possibleAttempts} attempts in ${d(r.Interval)} with initial delay ${d(r.Delay)} and delay function ${goQuote(r.DelayFunction)}`);
  } else {
    errors.append(
      `Nomad can only make ${possibleAttempts} attempts in ${d(r.Interval)} with initial delay ${d(r.Delay)}, delay function ${goQuote(r.DelayFunction)}, and delay ceiling ${d(r.MaxDelay)}`,
    );
  }
  // time.Duration.Round(time.Second): halves round away from zero.
  const rounded = Math.floor((recommendedInterval + SECOND / 2) / SECOND) * SECOND;
  errors.append(`Set the interval to at least ${d(rounded)} to accommodate ${r.Attempts} attempts`);
  return errors;
}

/** nomad/structs/structs.go, `ReschedulePolicy.viableAttempts`: [valid, possible attempts, recommended interval]. */
function viableAttempts(r: Json): [boolean, number, number] {
  let possible = 0;
  let recommended = 0;
  let valid = true;
  if (r.DelayFunction === 'constant') {
    recommended = r.Attempts * r.Delay;
    if (r.Interval < recommended) {
      possible = Math.trunc(r.Interval / r.Delay);
      valid = false;
    }
  } else if (r.DelayFunction === 'exponential') {
    for (let i = 0; i < r.Attempts; i += 1) {
      let next = 2 ** i * r.Delay;
      if (next > r.MaxDelay) {
        next = r.MaxDelay;
        recommended += next;
      } else {
        recommended = next;
      }
      if (recommended < r.Interval) possible += 1;
    }
    if (possible < r.Attempts) valid = false;
  } else {
    const slots = [r.Delay, r.Delay];
    let reachedCeiling = false;
    for (let i = 2; i < r.Attempts; i += 1) {
      let next: number;
      if (reachedCeiling) next = slots[i - 1]! + r.MaxDelay;
      else {
        next = slots[i - 1]! + slots[i - 2]!;
        if (next > r.MaxDelay) {
          next = r.MaxDelay;
          reachedCeiling = true;
        }
      }
      slots.push(next);
    }
    recommended = slots[slots.length - 1]!;
    if (r.Interval < recommended) {
      valid = false;
      const index = slots.findIndex((slot) => slot > r.Interval);
      if (index >= 0) possible = index;
    }
  }
  return [valid, Math.max(0, possible), recommended];
}

/** nomad/structs/structs.go, `UpdateStrategy.Validate`. */
export function validateUpdateStrategy(u: Json): MultiError | null {
  const errors = new MultiError();
  if (!['checks', 'task_states', 'manual'].includes(u.HealthCheck)) errors.append(`Invalid health check given: ${goQuote(u.HealthCheck)}`);
  if (u.MaxParallel < 0) errors.append(`Max parallel can not be less than zero: ${u.MaxParallel} < 0`);
  if (u.Canary < 0) errors.append(`Canary count can not be less than zero: ${u.Canary} < 0`);
  if (u.Canary === 0 && u.AutoPromote) errors.append('Auto Promote requires a Canary count greater than zero');
  if (u.MinHealthyTime < 0) errors.append(`Minimum healthy time may not be less than zero: ${d(u.MinHealthyTime)}`);
  if (u.HealthyDeadline <= 0) errors.append(`Healthy deadline must be greater than zero: ${d(u.HealthyDeadline)}`);
  if (u.ProgressDeadline < 0) errors.append(`Progress deadline must be zero or greater: ${d(u.ProgressDeadline)}`);
  if (u.MinHealthyTime >= u.HealthyDeadline) {
    errors.append(`Minimum healthy time must be less than healthy deadline: ${d(u.MinHealthyTime)} > ${d(u.HealthyDeadline)}`);
  }
  if (u.ProgressDeadline !== 0 && u.HealthyDeadline >= u.ProgressDeadline) {
    errors.append(`Healthy deadline must be less than progress deadline: ${d(u.HealthyDeadline)} > ${d(u.ProgressDeadline)}`);
  }
  if (u.Stagger <= 0) errors.append(`Stagger must be greater than zero: ${d(u.Stagger)}`);
  return errors.orNil();
}

/** nomad/structs/structs.go, `MigrateStrategy.Validate`. */
export function validateMigrateStrategy(m: Json): MultiError | null {
  const errors = new MultiError();
  if (m.MaxParallel < 0) errors.append(`MaxParallel must be >= 0 but found ${m.MaxParallel}`);
  if (m.HealthCheck === '') {
    if (m.MaxParallel > 0) errors.append('Missing HealthCheck');
  } else if (m.HealthCheck !== 'checks' && m.HealthCheck !== 'task_states') errors.append(`Invalid HealthCheck: ${goQuote(m.HealthCheck)}`);
  if (m.MinHealthyTime < 0) errors.append(`MinHealthyTime is ${d(m.MinHealthyTime)} and must be >= 0`);
  if (m.HealthyDeadline < 0) errors.append(`HealthyDeadline is ${d(m.HealthyDeadline)} and must be >= 0`);
  if (m.MinHealthyTime > m.HealthyDeadline) errors.append('MinHealthyTime must be less than HealthyDeadline');
  return errors.orNil();
}

/**
 * nomad/structs/structs.go, `ScalingPolicy.Validate`, with the CE `validateType`
 * (nomad/structs/structs_ce.go) and `validateTargetHorizontal`.
 */
export function validateScalingPolicy(p: Json): MultiError | null {
  const errors = new MultiError();
  if (p.Type === '') errors.push('missing scaling policy type');
  else if (p.Type !== 'horizontal') errors.push(`scaling policy type "${p.Type}" is not valid`);
  else if (Object.keys(p.Target ?? {}).length > 0) {
    if (!p.Target.Namespace) errors.push('missing target namespace');
    if (!p.Target.Job) errors.push('missing target job');
    if (!p.Target.Group) errors.push('missing target group');
  }
  if (p.Max < 0) errors.push('maximum count must be specified and non-negative');
  else if (p.Max < p.Min) errors.push('maximum count must not be less than minimum count');
  if (p.Min < 0) errors.push('minimum count must be specified and non-negative');
  return errors.orNil();
}
