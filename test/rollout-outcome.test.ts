import assert from 'node:assert/strict';
import type { JobStatus, Replica, ReplicaState } from '../control/domain/job.js';
import { rolloutOutcome } from '../control/domain/rollout-outcome.js';

/** When a rollout ended, from its job's status alone (control/domain/rollout-outcome.ts), the same for both drivers. */
const replica = (id: string, version: number, state: ReplicaState, error: string | null = null): Replica => ({ id, version, state, address: null, restarts: 0, startedAt: null, error });
const job = (version: number, ...replicas: Replica[]): JobStatus => ({ agentId: 'ag_1', version, count: 2, replicas, events: [] });

describe('rollout outcome (control/domain/rollout-outcome.ts)', () => {
  it('goes on while the new replicas start or older ones remain, even draining', () => {
    assert.equal(rolloutOutcome(job(4, replica('o1', 3, 'running'), replica('n1', 4, 'starting')), 1, 4), null);
    assert.equal(rolloutOutcome(job(4, replica('o1', 3, 'stopping'), replica('n1', 4, 'running')), 1, 4), null);
    assert.equal(rolloutOutcome(job(4, replica('o1', 3, 'running'), replica('n1', 4, 'running')), 1, 4), null, 'the old one still routed (Nomad drains after Consul)');
  });

  it('succeeds once exactly the desired replicas run, all of the new version', () => {
    const outcome = rolloutOutcome(job(4, replica('n1', 4, 'running'), replica('n2', 4, 'running')), 2, 4);
    assert.deepEqual(outcome, { status: 'succeeded', message: '2 replica(s) of version 4 running; no older replica left' });
    assert.equal(rolloutOutcome(job(4, replica('n1', 4, 'running')), 2, 4), null, 'one of two');
    assert.equal(rolloutOutcome(job(4, replica('n1', 4, 'running'), replica('n2', 4, 'running'), replica('n3', 4, 'stopping')), 2, 4), null, 'a surplus replica still stopping');
  });

  it('succeeds for an auto-scaled agent at any count within its bounds (the Nomad Autoscaler keeps its own count)', () => {
    const three = job(4, replica('n1', 4, 'running'), replica('n2', 4, 'running'), replica('n3', 4, 'running'));
    assert.deepEqual(rolloutOutcome(three, { min: 1, max: 5 }, 4), { status: 'succeeded', message: '3 replica(s) of version 4 running; no older replica left' });
    assert.equal(rolloutOutcome(three, { min: 1, max: 2 }, 4), null, 'above the bounds: still scaling in');
    assert.equal(rolloutOutcome(job(4, replica('o1', 3, 'running'), replica('n1', 4, 'running')), { min: 1, max: 5 }, 4), null, 'an older replica remains');
    assert.equal(rolloutOutcome(job(4, replica('n1', 4, 'starting')), { min: 1, max: 5 }, 4), null, 'not running yet');
  });

  it('fails when a replica of the new version could not start or used up its restarts, while the old ones serve', () => {
    const crashed = job(4, replica('o1', 3, 'running'), replica('n1', 4, 'crashed', 'exited with code 3; restarted 2 times'));
    assert.deepEqual(rolloutOutcome(crashed, 1, 4), { status: 'failed', error: 'exited with code 3; restarted 2 times' });
    const pull = job(4, replica('o1', 3, 'running'), replica('n1', 4, 'failed', 'image x could not be pulled: no such host'));
    assert.deepEqual(rolloutOutcome(pull, 1, 4), { status: 'failed', error: 'image x could not be pulled: no such host' });
  });

  it('says nothing while the job still runs an older version (not submitted yet), or there is no job', () => {
    assert.equal(rolloutOutcome(job(3, replica('o1', 3, 'running')), 1, 4), null);
    assert.equal(rolloutOutcome(null, 1, 4), null);
  });

  it('a crash of an older replica is not the new version failing', () => {
    assert.equal(rolloutOutcome(job(4, replica('o1', 3, 'crashed', 'exited'), replica('n1', 4, 'starting')), 1, 4), null);
  });
});
