/**
 * Bounds the Checks one authz process works on at once. Up to `maxInFlight` run; up to
 * `maxQueued` more wait their turn in arrival order; any beyond that are shed at once.
 * A Check's Redis deadline only starts when it leaves the queue (issue 13 item 6: under
 * load, queued time used to eat the whole deadline, so nearly every Check failed instead
 * of a few being shed). Pure bookkeeping: no clock, no I/O.
 */
export interface AdmissionLimits {
  maxInFlight: number;
  maxQueued: number;
}

export type Admission = <T>(work: () => Promise<T>) => Promise<T> | 'shed';

export function createAdmission(limits: AdmissionLimits): Admission {
  let inFlight = 0;
  const queue: (() => void)[] = [];

  const release = () => {
    const next = queue.shift();
    if (next) next();
    else inFlight -= 1;
  };

  return <T>(work: () => Promise<T>) => {
    if (inFlight < limits.maxInFlight) {
      inFlight += 1;
      return run(work, release);
    }
    if (queue.length >= limits.maxQueued) return 'shed';
    // The slot of the Check that finishes passes straight to this one: inFlight is unchanged.
    return new Promise<void>((resolve) => queue.push(resolve)).then(() => run(work, release));
  };
}

async function run<T>(work: () => Promise<T>, release: () => void): Promise<T> {
  try {
    return await work();
  } finally {
    release();
  }
}
