import assert from 'node:assert/strict';
import { creating, imageStep, launched, newReplica, observe, stopping, type ReplicaJob } from '../control/orchestrator/podman/replica-state.js';
import { progressOf } from '../control/orchestrator/podman/rollout-phases.js';
import { sampleSpec } from './support/nomad-samples.js';

/** Which of the podman driver's job events are which rollout steps, without podman. */
const AT = new Date('2026-11-23T03:00:00Z');
const policy = { startGraceMs: 30_000, restartBudget: 2, restartBackoffBaseMs: 200, restartBackoffMaxMs: 500 };

function rollout() {
  const old = newReplica('ag-old', sampleSpec({ version: 3 }));
  const fresh = newReplica('ag-new', sampleSpec({ version: 4 }));
  const job: ReplicaJob = { spec: sampleSpec({ version: 4, count: 1 }), replicas: new Map([[old.id, old], [fresh.id, fresh]]) };
  return { job, old, fresh };
}

describe('podman driver: job events → rollout steps (control/orchestrator/podman/rollout-phases.ts)', () => {
  it('a new replica goes image, starting (container created), health_check (runs, port probed), routing (port open)', () => {
    const { job, fresh } = rollout();
    const events = [imageStep(job.spec, true), creating(fresh), launched(fresh, AT), ...observe(fresh, { container: 'running', portOpen: true }, AT.getTime(), policy).events];
    const steps = events.map((event) => progressOf(job, event, AT));
    assert.deepEqual(steps.map((s) => s && [s.phase, s.replicaId, s.version]), [
      ['pulling', null, 4],
      ['starting', 'ag-new', 4],
      ['health_check', 'ag-new', 4],
      ['routing', 'ag-new', 4],
    ]);
    assert.deepEqual(steps.map((s) => s?.message), [
      `image ${job.spec.image} is present`,
      `creating container from ${job.spec.image}`,
      `container started from ${job.spec.image}`,
      'port accepts connections',
    ]);
    assert.equal(progressOf(job, imageStep(job.spec, false), AT)?.message, `pulling image ${job.spec.image}`);
  });

  it('an older replica stopping is the drain of the version that replaces it; a current one stopping (scale-down) is no step', () => {
    const { job, old, fresh } = rollout();
    const [drain] = stopping([old], 'replaced by version 4').events;
    assert.deepEqual(progressOf(job, drain!, AT), { agentId: job.spec.agentId, version: 4, phase: 'draining', replicaId: 'ag-old', message: 'replaced by version 4', at: AT });
    const [scaledDown] = stopping([fresh], 'scaled down').events;
    assert.equal(progressOf(job, scaledDown!, AT), null);
  });

  it('exits, crashes, failures, adoption and scaling are no step: the platform decides the end from the status', () => {
    const { job } = rollout();
    for (const type of ['exited', 'crashed', 'failed', 'adopted', 'submitted', 'scaled']) {
      assert.equal(progressOf(job, { replicaId: 'ag-new', type, message: '' }, AT), null, type);
    }
  });

  it('an old replica routed again (after a restart) is a step of its own version, not of the rollout', () => {
    const { job, old } = rollout();
    assert.equal(progressOf(job, { replicaId: old.id, type: 'ready', message: 'port accepts connections' }, AT)?.version, 3);
  });

  describe('a canary (JobSpec.stable, issue 36)', () => {
    function canaryJob() {
      const stable = newReplica('ag-stable', sampleSpec({ version: 3 }));
      const canary = newReplica('ag-canary', sampleSpec({ version: 4 }));
      const job: ReplicaJob = { spec: sampleSpec({ version: 4, count: 1, stable: sampleSpec({ version: 3, count: 2 }) }), replicas: new Map([[stable.id, stable], [canary.id, canary]]) };
      return { job, stable, canary };
    }

    it('its steps are the canary version\'s, and say so', () => {
      const { job, canary } = canaryJob();
      const steps = [imageStep(job.spec, true), creating(canary), launched(canary, AT)].map((event) => progressOf(job, event, AT));
      assert.deepEqual(steps.map((s) => s && [s.phase, s.version, s.message]), [
        ['pulling', 4, `canary: image ${job.spec.image} is present`],
        ['starting', 4, `canary: creating container from ${job.spec.image}`],
        ['health_check', 4, `canary: container started from ${job.spec.image}`],
      ]);
    });

    it('a stable replica stopping beside it is no step of it', () => {
      const { job, stable } = canaryJob();
      const [scaledDown] = stopping([stable], 'scaled down').events;
      assert.equal(progressOf(job, scaledDown!, AT), null);
    });

    it('aborted: its replicas stopping are the last step of the canary version', () => {
      const { job, canary } = canaryJob();
      job.spec = sampleSpec({ version: 3, count: 2 });
      const [drain] = stopping([canary], 'canary aborted: version 3 serves alone').events;
      assert.deepEqual(progressOf(job, drain!, AT), { agentId: job.spec.agentId, version: 4, phase: 'draining', replicaId: 'ag-canary', message: 'canary aborted: version 3 serves alone', at: AT });
    });
  });
});
