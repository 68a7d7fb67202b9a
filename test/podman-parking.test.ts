import assert from 'node:assert/strict';
import type { JobSpec, ReplicaState } from '../control/domain/job.js';
import { adoptsAsParked, modeAt, parkingStep, type ParkingJob } from '../control/orchestrator/podman/parking.js';
import { launched, newReplica, type ReplicaRecord } from '../control/orchestrator/podman/replica-state.js';
import { sampleSpec } from './support/nomad-samples.js';

/**
 * Warm and cold parking's decisions without podman (issue 40): which replica a parked job
 * keeps, when a frozen one is stopped, when it is resumed and when it goes.
 */

const T0 = Date.parse('2026-11-27T10:00:00Z');
const WARM_UNTIL = new Date(T0 + 600_000);
const parkedSpec = (overrides: Partial<JobSpec> = {}) => sampleSpec({ version: 3, count: 0, parked: { warmUntil: WARM_UNTIL }, ...overrides });

function replica(id: string, state: ReplicaState, version = 3): ReplicaRecord {
  const record = newReplica(id, sampleSpec({ version }));
  record.busy = false;
  launched(record, new Date(T0));
  record.state = state;
  return record;
}

const jobOf = (spec: JobSpec, replicas: ReplicaRecord[], parked: ParkingJob['parked'] = null): ParkingJob => ({
  spec,
  replicas: new Map(replicas.map((r) => [r.id, r])),
  parked,
});

describe('podman parking decisions', () => {
  it('a parked job keeps one running replica of its version, warm while its warm period lasts, cold after or without one', () => {
    const running = replica('a', 'running');
    const job = jobOf(parkedSpec(), [replica('s', 'starting'), replica('old', 'running', 2), running]);
    assert.deepEqual(parkingStep(job, T0), { step: 'park', record: running, mode: 'warm' });
    assert.deepEqual(parkingStep(jobOf(parkedSpec({ parked: { warmUntil: null } }), [running]), T0), { step: 'park', record: running, mode: 'cold' });
    assert.deepEqual(parkingStep(job, WARM_UNTIL.getTime()), { step: 'park', record: running, mode: 'cold' }, 'its warm period is over by the time it parks');
  });

  it('parks nothing without a running replica of the version, for a count of 0 its owner asked (no parked), or beside a canary', () => {
    assert.deepEqual(parkingStep(jobOf(parkedSpec(), [replica('c', 'crashed'), replica('s', 'starting')]), T0), { step: 'none' });
    const busy = replica('b', 'running');
    busy.busy = true;
    assert.deepEqual(parkingStep(jobOf(parkedSpec(), [busy]), T0), { step: 'none' });
    assert.deepEqual(parkingStep(jobOf(sampleSpec({ version: 3, count: 0 }), [replica('a', 'running')]), T0), { step: 'none' });
    const canary = parkedSpec({ stable: sampleSpec({ version: 2, count: 1 }) });
    assert.deepEqual(parkingStep(jobOf(canary, [replica('a', 'running')]), T0), { step: 'none' });
  });

  it('a frozen replica is stopped once its warm period is over, and a stopped one stays stopped', () => {
    const parked = { record: replica('a', 'running'), mode: 'warm' as const, draining: false, stopping: false };
    assert.deepEqual(parkingStep(jobOf(parkedSpec(), [], parked), WARM_UNTIL.getTime() - 1), { step: 'none' });
    assert.deepEqual(parkingStep(jobOf(parkedSpec(), [], parked), WARM_UNTIL.getTime()), { step: 'cool' });
    assert.deepEqual(parkingStep(jobOf(parkedSpec(), [], { ...parked, mode: 'cold' }), WARM_UNTIL.getTime() + 1), { step: 'none' });
  });

  it('a wake (a count above 0) resumes the parked replica of the same version; anything else discards it', () => {
    const parked = { record: replica('a', 'running'), mode: 'warm' as const, draining: false, stopping: false };
    assert.deepEqual(parkingStep(jobOf(sampleSpec({ version: 3, count: 1 }), [], parked), T0), { step: 'resume' });
    assert.deepEqual(parkingStep(jobOf(sampleSpec({ version: 4, count: 1 }), [], parked), T0), { step: 'discard' }, 'a redeploy while parked');
    assert.deepEqual(parkingStep(jobOf(sampleSpec({ version: 3, count: 0 }), [], parked), T0), { step: 'discard' }, "its owner's scale to 0 stops it for good");
    const canary = sampleSpec({ version: 4, count: 1, stable: sampleSpec({ version: 3, count: 1 }) });
    assert.deepEqual(parkingStep(jobOf(canary, [], parked), T0), { step: 'discard' });
  });

  it('a replica still in its drain period is woken as it is, discarded like a parked one, and never cooled', () => {
    const draining = { record: replica('a', 'running'), mode: 'warm' as const, draining: true, stopping: false };
    assert.deepEqual(parkingStep(jobOf(sampleSpec({ version: 3, count: 1 }), [], draining), T0), { step: 'resume' });
    assert.deepEqual(parkingStep(jobOf(sampleSpec({ version: 4, count: 1 }), [], draining), T0), { step: 'discard' });
    assert.deepEqual(parkingStep(jobOf(parkedSpec(), [], draining), WARM_UNTIL.getTime()), { step: 'none' }, 'not frozen yet: nothing to stop before its drain ends');
  });

  it('a replica being stopped (cold parking, or cooling) is never cooled again; a wake or a discard is still the next step, done once it has stopped', () => {
    const stopping = { record: replica('a', 'running'), mode: 'warm' as const, draining: false, stopping: true };
    assert.deepEqual(parkingStep(jobOf(parkedSpec(), [], stopping), WARM_UNTIL.getTime()), { step: 'none' });
    assert.deepEqual(parkingStep(jobOf(sampleSpec({ version: 3, count: 1 }), [], stopping), T0), { step: 'resume' });
    assert.deepEqual(parkingStep(jobOf(sampleSpec({ version: 4, count: 1 }), [], stopping), T0), { step: 'discard' });
  });

  it('after a restart of the control API, a paused container is the parked replica (warm), an exited one only while the job is parked (cold)', () => {
    assert.equal(adoptsAsParked(jobOf(parkedSpec(), []), { state: 'paused' }), 'warm');
    assert.equal(adoptsAsParked(jobOf(sampleSpec({ count: 1 }), []), { state: 'paused' }), 'warm', 'woken next: thawed rather than restarted');
    assert.equal(adoptsAsParked(jobOf(parkedSpec(), []), { state: 'exited' }), 'cold');
    assert.equal(adoptsAsParked(jobOf(sampleSpec({ count: 1 }), []), { state: 'exited' }), null, 'an exit of a running job is a crash');
    assert.equal(adoptsAsParked(jobOf(parkedSpec(), []), { state: 'running' }), null);
    assert.equal(adoptsAsParked(jobOf(parkedSpec(), [], { record: replica('a', 'running'), mode: 'warm', draining: false, stopping: false }), { state: 'paused' }), null, 'one parked replica per job');
  });

  it('warm until the instant its period ends', () => {
    assert.equal(modeAt(WARM_UNTIL, WARM_UNTIL.getTime() - 1), 'warm');
    assert.equal(modeAt(WARM_UNTIL, WARM_UNTIL.getTime()), 'cold');
    assert.equal(modeAt(null, T0), 'cold');
  });
});
