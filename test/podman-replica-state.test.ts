import assert from 'node:assert/strict';
import {
  adoptedReplica,
  died,
  failed,
  fingerprint,
  isSettled,
  launched,
  newReplica,
  observe,
  plan,
  restartDelayMs,
  specOfVersion,
  stopping,
  type JobPlan,
  type ReplicaJob,
  type ReplicaRecord,
  type RestartPolicy,
} from '../control/orchestrator/podman/replica-state.js';
import type { JobSpec, ReplicaState } from '../control/domain/job.js';
import { parseDeath } from '../control/orchestrator/podman/container-deaths.js';
import { sampleSpec } from './support/nomad-samples.js';

/**
 * The podman driver's replica state machine without podman: what a replica becomes after
 * what a poll saw of its container, and what a job needs next. The default settings:
 * START_GRACE_SECONDS=30, RESTART_BUDGET=5, RESTART_BACKOFF_BASE_MS=1000, RESTART_BACKOFF_MAX_MS=30000.
 */

const policy: RestartPolicy = { startGraceMs: 30_000, restartBudget: 5, restartBackoffBaseMs: 1000, restartBackoffMaxMs: 30_000 };
const T0 = Date.parse('2024-11-20T10:00:00Z');
const spec = (overrides: Partial<JobSpec> = {}) => sampleSpec({ version: 3, count: 2, ...overrides });

/** A replica of `version` in `state`, started at T0. */
function replica(id: string, state: ReplicaState, version = 3): ReplicaRecord {
  const record = newReplica(id, spec({ version }));
  record.busy = false;
  if (state !== 'pending') launched(record, new Date(T0));
  record.state = state;
  if (state === 'running') record.address = '10.89.0.2:8080';
  return record;
}

const job = (wanted: Partial<JobSpec>, ...replicas: ReplicaRecord[]): ReplicaJob => ({ spec: spec(wanted), replicas: new Map(replicas.map((r) => [r.id, r])) });

/** A plan with nothing to do but `changes`. */
const planned = (changes: Partial<JobPlan> = {}): JobPlan => ({ launch: 0, surplus: [], replaced: [], launchStable: 0, crashedStable: [], aborted: [], ...changes });

const running = { container: 'running', portOpen: false } as const;
const listening = { container: 'running', portOpen: true } as const;
const exited = (exitCode = 1) => ({ container: 'exited', exitCode }) as const;
const missing = { container: 'missing' } as const;

describe('podman replica state machine (control/orchestrator/podman/replica-state.ts)', () => {
  describe('a starting replica', () => {
    it('is routed once its port accepts connections', () => {
      const record = replica('r1', 'starting');
      const { next, events } = observe(record, listening, T0 + 1000, policy);
      assert.equal(record.state, 'running');
      assert.deepEqual(events, [{ replicaId: 'r1', type: 'ready', message: 'port accepts connections' }]);
      assert.deepEqual(next, { restart: false });
    });

    it('stays starting, unrouted, while its port is closed within the start grace period', () => {
      const record = replica('r1', 'starting');
      const { events } = observe(record, running, T0 + 29_999, policy);
      assert.equal(record.state, 'starting');
      assert.deepEqual(events, []);
    });

    it('is routed without a listening port once the start grace period is over, so the edge answers 502, not 503', () => {
      const record = replica('r1', 'starting');
      const { events } = observe(record, running, T0 + 30_000, policy);
      assert.equal(record.state, 'running');
      assert.deepEqual(events, [{ replicaId: 'r1', type: 'ready', message: 'start grace period over: routed without a listening port' }]);
    });

    it('a running replica seen running again changes nothing and says nothing', () => {
      const record = replica('r1', 'running');
      assert.deepEqual(observe(record, running, T0 + 60_000, policy), { next: { restart: false }, events: [] });
      assert.equal(record.state, 'running');
    });
  });

  describe('a replica whose container died (podman\'s event, before the next poll)', () => {
    it('leaves routing at once; the poll that sees the exit counts it once, and a poll listed before the death does not route it again', () => {
      const record = replica('r1', 'running');
      assert.equal(died(record, new Date(T0 + 5000)), true);
      assert.equal(record.address, null, 'no longer routed');
      assert.equal(record.state, 'running', 'the state machine decides on the poll, as ever');
      // A poll whose listing predates the death still sees it running: nothing changes.
      assert.deepEqual(observe(record, running, T0 + 5001, policy), { next: { restart: false }, events: [] });
      assert.equal(record.address, null);
      observe(record, exited(137), T0 + 5100, policy);
      assert.equal(record.state, 'restarting');
      assert.equal(record.restarts, 1);
    });

    it('changes nothing for a death from before its latest start, or when it was not routed', () => {
      const record = replica('r1', 'running');
      assert.equal(died(record, new Date(T0 - 1)), false, 'an event late past a restart');
      assert.equal(record.address, '10.89.0.2:8080');
      assert.equal(died(replica('r2', 'starting'), new Date(T0 + 1)), false);
    });

    it('reads podman\'s event line, and nothing else', () => {
      const line = '{"ContainerExitCode":137,"ID":"aafb","Name":"agt_x-abc123","Status":"died","Time":"2026-11-26T16:21:27.04549851Z","Type":"container","Attributes":{"platform.instance":"default"}}';
      assert.deepEqual(parseDeath(line), { name: 'agt_x-abc123', exitCode: 137, at: new Date('2026-11-26T16:21:27.045Z') });
      assert.equal(parseDeath(line.replace('"died"', '"start"')), null);
      assert.equal(parseDeath(line.replace('"Time":"2026-11-26T16:21:27.04549851Z"', '"Time":"soon"')), null);
      assert.equal(parseDeath('not json'), null);
    });
  });

  describe('a replica whose container exits', () => {
    it('leaves routing and waits out the backoff before it is restarted in its own container', () => {
      const record = replica('r1', 'running');
      const { next, events } = observe(record, exited(137), T0 + 5000, policy);
      assert.equal(record.state, 'restarting');
      assert.equal(record.address, null, 'no longer routed');
      assert.equal(record.restarts, 1);
      assert.deepEqual(next, { restart: false }, 'not at once: after the backoff');
      assert.deepEqual(events, [{ replicaId: 'r1', type: 'exited', message: 'exited with code 137; restart 1 of 5 after backoff' }]);

      assert.deepEqual(observe(record, exited(137), T0 + 5999, policy).next, { restart: false }, 'still within the first backoff (1 s)');
      assert.deepEqual(observe(record, exited(137), T0 + 6000, policy).next, { restart: true, containerExists: true });
      assert.equal(record.restarts, 1, 'waiting is not another exit');
    });

    it('whose container vanished is created again, and says so', () => {
      const record = replica('r1', 'running');
      assert.equal(observe(record, missing, T0, policy).events[0]!.message, 'container disappeared; restart 1 of 5 after backoff');
      assert.deepEqual(observe(record, missing, T0 + 1000, policy).next, { restart: true, containerExists: false });
    });

    it('waits twice as long after each exit, at most RESTART_BACKOFF_MAX_MS', () => {
      assert.deepEqual([1, 2, 3, 4, 5, 6, 7].map((restarts) => restartDelayMs(restarts, policy)), [1000, 2000, 4000, 8000, 16_000, 30_000, 30_000]);
      const record = replica('r1', 'running');
      const now = T0 + 100_000;
      for (const expected of [1000, 2000, 4000]) {
        observe(record, exited(), now, policy);
        assert.equal(record.restartAt - now, expected);
        record.state = 'starting'; // restarted, and it exits again
      }
    });

    it('is crashed after RESTART_BUDGET restarts: never restarted again, with the reason', () => {
      const record = replica('r1', 'running');
      let now = T0;
      for (let exit = 1; exit <= 5; exit += 1) {
        observe(record, exited(), now, policy);
        assert.equal(record.state, 'restarting', `exit ${exit} is within the budget`);
        now = record.restartAt;
        assert.equal(observe(record, exited(), now, policy).next.restart, true);
        record.state = 'starting'; // the supervisor restarted it
      }
      const { events } = observe(record, exited(), now, policy);
      assert.equal(record.state, 'crashed');
      assert.equal(record.error, 'exited with code 1; restarted 5 times');
      assert.deepEqual(events, [{ replicaId: 'r1', type: 'crashed', message: 'exited with code 1; restarted 5 times' }]);
      assert.ok(isSettled(record), 'no poll changes a crashed replica');
    });

    it('with RESTART_BUDGET=0, is crashed at its first exit', () => {
      const record = replica('r1', 'running');
      observe(record, exited(2), T0, { ...policy, restartBudget: 0 });
      assert.equal(record.state, 'crashed');
      assert.equal(record.error, 'exited with code 2; restarted 0 times');
    });
  });

  describe('starting containers', () => {
    it('a launched replica is starting, with the image it started from in its event', () => {
      const record = newReplica('r1', spec());
      assert.equal(record.state, 'pending');
      assert.equal(record.busy, true, 'polls leave it alone while its container is created');
      assert.deepEqual(launched(record, new Date(T0)), { replicaId: 'r1', type: 'started', message: `container started from ${spec().image}` });
      assert.equal(record.state, 'starting');
      assert.deepEqual(record.startedAt, new Date(T0));
    });

    it('a replica that could not start is failed with the reason, and settled', () => {
      const record = newReplica('r1', spec());
      assert.deepEqual(failed(record, 'image x could not be pulled: not found'), { replicaId: 'r1', type: 'failed', message: 'image x could not be pulled: not found' });
      assert.equal(record.state, 'failed');
      assert.equal(record.error, 'image x could not be pulled: not found');
      assert.ok(isSettled(record));
    });

    it('a container found after a restart of the control API is adopted at its labelled version: running ones are re-proven, others restarted at once', () => {
      const { record, event } = adoptedReplica(spec({ version: 4 }), { id: 'r9', state: 'running', version: 3 }, new Date(T0));
      assert.equal(record.state, 'starting');
      assert.equal(record.spec.version, 3, 'its own version, so a rollout still replaces it');
      assert.equal(record.busy, false);
      assert.deepEqual(event, { replicaId: 'r9', type: 'adopted', message: 'found running container of version 3' });

      const stopped = adoptedReplica(spec(), { id: 'r8', state: 'exited', version: 3 }, new Date(T0)).record;
      assert.equal(stopped.state, 'restarting');
      assert.deepEqual(observe(stopped, exited(0), T0, policy).next, { restart: true, containerExists: true });
    });
  });

  describe('what a job needs next', () => {
    it('starts the missing replicas', () => {
      assert.equal(plan(job({ count: 3 })).launch, 3);
      assert.equal(plan(job({ count: 3 }, replica('a', 'running'), replica('b', 'restarting'))).launch, 1, 'a restarting replica still counts');
      assert.deepEqual(plan(job({ count: 2 }, replica('a', 'running'), replica('b', 'starting'))), planned());
    });

    it('does not relaunch a version whose replicas failed or crashed: that would repeat the failure forever', () => {
      assert.equal(plan(job({ count: 2 }, replica('a', 'running'), replica('b', 'failed'))).launch, 0);
      assert.equal(plan(job({ count: 2 }, replica('a', 'crashed'))).launch, 0);
      assert.equal(plan(job({ count: 2, version: 4 }, replica('a', 'failed', 3))).launch, 2, 'the next deploy starts afresh');
    });

    it('scaling down stops those doing the least good first, then the oldest: the newest running replica stays', () => {
      const [a, b, c] = [replica('a', 'running'), replica('b', 'running'), replica('c', 'running')];
      assert.deepEqual(plan(job({ count: 1 }, a, b, c)).surplus.map((r) => r.id), ['a', 'b']);
      const mixed = job({ count: 1 }, replica('run', 'running'), replica('start', 'starting'), replica('wait', 'restarting'), replica('new', 'pending'));
      assert.deepEqual(plan(mixed).surplus.map((r) => r.id), ['new', 'wait', 'start']);
      assert.deepEqual(plan(job({ count: 0 }, a, replica('x', 'failed'))).surplus.map((r) => r.id), ['a'], 'failed replicas are not live: left for the next deploy');
    });

    it('scaling down stops a running replica whose container died (out of routing, its exit not yet counted) before a routed one', () => {
      const [older, dead, newest] = [replica('older', 'running'), replica('dead', 'running'), replica('newest', 'running')];
      assert.equal(died(dead, new Date(T0 + 5000)), true);
      assert.deepEqual(plan(job({ count: 2 }, older, dead, newest)).surplus.map((r) => r.id), ['dead']);
      assert.deepEqual(plan(job({ count: 1 }, older, dead, newest)).surplus.map((r) => r.id), ['dead', 'older'], 'then the oldest, as ever');
    });

    it('rolls out health-gated: the old version stops only once the new one is fully running', () => {
      const old = [replica('o1', 'running', 2), replica('o2', 'running', 2)];
      const rolling = job({ count: 2 }, ...old, replica('n1', 'running'), replica('n2', 'starting'));
      assert.deepEqual(plan(rolling), planned(), 'n2 is not ready yet');
      rolling.replicas.get('n2')!.state = 'running';
      assert.deepEqual(plan(rolling).replaced, old);
      assert.equal(plan(job({ count: 2 }, ...old)).launch, 2, 'a new version starts beside the old one');
    });

    it('a new version asked to run 0 replicas stops the old one at once', () => {
      const old = replica('o1', 'running', 2);
      assert.deepEqual(plan(job({ count: 0 }, old)).replaced, [old]);
    });

    it('ignores replicas already stopping', () => {
      const leaving = replica('s', 'running');
      stopping([leaving], 'scaled down');
      assert.deepEqual(plan(job({ count: 1 }, leaving)), planned({ launch: 1 }));
    });
  });

  describe('a canary beside the stable version (JobSpec.stable, issue 36)', () => {
    /** Version 4 as a canary of `count` replicas beside stable version 3 at `stableCount`. */
    const canary = (count: number, stableCount: number, ...replicas: ReplicaRecord[]) =>
      job({ version: 4, count, stable: spec({ version: 3, count: stableCount }) }, ...replicas);
    const stable = () => [replica('s1', 'running', 3), replica('s2', 'running', 3)];

    it('starts the canary beside the stable replicas, which stay as they are', () => {
      assert.deepEqual(plan(canary(1, 2, ...stable())), planned({ launch: 1 }));
      assert.deepEqual(plan(canary(1, 2, ...stable(), replica('c1', 'running', 4))), planned(), 'both versions at their counts');
    });

    it('starts stable replicas while the stable version is short of its count, and replaces those crashed past their budget', () => {
      assert.deepEqual(plan(canary(1, 3, ...stable(), replica('c1', 'running', 4))), planned({ launchStable: 1 }));
      const crashed = replica('s3', 'crashed', 3);
      assert.deepEqual(plan(canary(1, 2, replica('s1', 'running', 3), crashed, replica('c1', 'starting', 4))), planned({ launchStable: 1, crashedStable: [crashed] }));
      assert.deepEqual(plan(canary(1, 2, replica('s1', 'running', 3), replica('s2', 'restarting', 3))), planned({ launch: 1 }), 'a restarting stable replica still counts: it restarts like any');
      assert.equal(plan(canary(1, 2, replica('s1', 'running', 3), replica('s2', 'failed', 3))).launchStable, 0, 'one that could not start would fail again at every tick');
    });

    it('stops stable replicas past the stable count, not the canary\'s', () => {
      const [s1, s2] = stable();
      assert.deepEqual(plan(canary(1, 1, s1!, s2!, replica('c1', 'running', 4))).surplus, [s1]);
    });

    it('replaces other versions once the canary\'s replicas are running, never the stable ones', () => {
      const other = replica('o1', 'running', 2);
      const starting = canary(1, 2, ...stable(), other, replica('c1', 'starting', 4));
      assert.deepEqual(plan(starting), planned(), 'the canary is not running yet');
      starting.replicas.get('c1')!.state = 'running';
      assert.deepEqual(plan(starting), planned({ replaced: [other] }));
    });

    it('an abort (the stable spec again, without `stable`) stops the canary\'s replicas at once and leaves the stable ones be', () => {
      const canaryReplica = replica('c1', 'running', 4);
      const aborted = job({ version: 3, count: 2 }, ...stable(), canaryReplica);
      assert.deepEqual(plan(aborted), planned({ aborted: [canaryReplica] }));
      const stillStarting = replica('c2', 'starting', 4);
      assert.deepEqual(plan(job({ version: 3, count: 2 }, ...stable(), stillStarting)).aborted, [stillStarting], 'not waiting for anything');
    });

    it('a promotion (the canary\'s version without `stable`, at the full count) is a rollout: the stable replicas stop once the count is running', () => {
      const old = stable();
      const promoted = job({ version: 4, count: 2 }, ...old, replica('c1', 'running', 4));
      assert.deepEqual(plan(promoted), planned({ launch: 1 }), 'the canary replica stays, one more starts');
      promoted.replicas.set('c2', replica('c2', 'starting', 4));
      assert.deepEqual(plan(promoted), planned(), 'health-gated: c2 is not ready');
      promoted.replicas.get('c2')!.state = 'running';
      assert.deepEqual(plan(promoted), planned({ replaced: old }));
    });

    it('a stable spec that is not older than the job is no canary', () => {
      const same = job({ version: 4, count: 1, stable: spec({ version: 4, count: 2 }) });
      assert.deepEqual(plan(same), planned({ launch: 1 }));
    });

    it('a replica runs its own version\'s spec: the stable\'s beside a canary (so a restart keeps its image), else the job\'s', () => {
      const stableSpec = spec({ version: 3, image: 'registry.example/agent:stable' });
      const canarySpec = spec({ version: 4, image: 'registry.example/agent:canary', stable: stableSpec });
      assert.equal(specOfVersion(canarySpec, 3), stableSpec);
      assert.equal(specOfVersion(canarySpec, 4), canarySpec);
      assert.deepEqual(specOfVersion(canarySpec, 2), { ...canarySpec, version: 2 }, 'another version only waits to be replaced');
      assert.equal(specOfVersion(stableSpec, 3), stableSpec);
    });
  });

  describe('stopping replicas', () => {
    it('takes them out of routing first, and drains only when one was routed', () => {
      const records = [replica('a', 'running'), replica('b', 'starting')];
      const { drain, events } = stopping(records, 'replaced by version 4');
      assert.equal(drain, true);
      assert.deepEqual(records.map((r) => [r.state, r.address]), [['stopping', null], ['stopping', null]]);
      assert.deepEqual(events, [
        { replicaId: 'a', type: 'stopping', message: 'replaced by version 4' },
        { replicaId: 'b', type: 'stopping', message: 'replaced by version 4' },
      ]);
      assert.equal(stopping([replica('c', 'restarting')], 'scaled down').drain, false, 'nothing in flight to wait for');
    });
  });

  it('tells listeners of a change in presence, state, address or restarts, or in the count', () => {
    const record = replica('a', 'starting');
    const watched = job({ count: 1 }, record);
    const before = fingerprint(watched);
    assert.equal(fingerprint(watched), before);
    observe(record, listening, T0, policy);
    assert.notEqual(fingerprint(watched), before, 'now routed');
    const routed = fingerprint(watched);
    watched.spec = { ...watched.spec, count: 2 };
    assert.notEqual(fingerprint(watched), routed);
  });
});
