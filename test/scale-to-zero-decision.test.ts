import assert from 'node:assert/strict';
import { formatWakeEvent, parseWakeEvent } from '../contract/edge-keys.js';
import { observedState } from '../control/domain/agent-status.js';
import { DEFAULT_DEPLOY, type StoredDeploy } from '../control/domain/deploy.js';
import { afterLook, parkingDue, wakeable, type ActivityMemory } from '../control/domain/scale-to-zero.js';
import type { JobStatus, Replica } from '../control/domain/job.js';

describe('scale to zero: the decisions (control/domain/scale-to-zero.ts)', () => {
  const reachMs = 55_000;
  const t0 = Date.parse('2031-05-06T07:08:00.000Z');
  const look = (at: number, sawRequests = false) => ({ at, sawRequests, reachMs });

  describe('idleness', () => {
    it('counts an agent seen for the first time as busy now, so a restart of the control API never parks early', () => {
      const memory = afterLook(undefined, look(t0));
      assert.deepEqual(memory, { lastActiveAt: t0, lastLookAt: t0 });
      assert.equal(parkingDue(memory, t0 + 29_999, 30), false);
      assert.equal(parkingDue(memory, t0 + 30_000, 30), true);
    });

    it('keeps the last activity across quiet looks and moves it on a look that saw requests', () => {
      let memory: ActivityMemory = afterLook(undefined, look(t0));
      memory = afterLook(memory, look(t0 + 15_000, true));
      memory = afterLook(memory, look(t0 + 30_000));
      memory = afterLook(memory, look(t0 + 45_000));
      assert.equal(memory.lastActiveAt, t0 + 15_000);
      assert.equal(parkingDue(memory, t0 + 45_000, 30), true);
      assert.equal(parkingDue(memory, t0 + 44_999, 30), false);
    });

    it('counts a gap between looks longer than the figures reach as activity (another copy ran the passes)', () => {
      const memory = afterLook({ lastActiveAt: t0, lastLookAt: t0 }, look(t0 + reachMs + 1));
      assert.equal(memory.lastActiveAt, t0 + reachMs + 1);
      assert.equal(afterLook({ lastActiveAt: t0, lastLookAt: t0 }, look(t0 + reachMs)).lastActiveAt, t0);
    });
  });

  describe('wakeable', () => {
    const agent = (deploy: Partial<StoredDeploy>, desired: number, parkedAt: Date | null = null) => ({
      deploy: { ...DEFAULT_DEPLOY, ...deploy }, deployed_version: 1, desired_replicas: desired, parked_at: parkedAt,
    });
    const zeroable = { auto_scale: true, min_replicas: 0 };

    it('is an agent that scales to zero, running or parked', () => {
      assert.equal(wakeable(agent(zeroable, 1)), true);
      assert.equal(wakeable(agent(zeroable, 0, new Date(t0))), true);
    });

    it('is not an agent its owner stopped, one that keeps a minimum, or one never deployed', () => {
      assert.equal(wakeable(agent(zeroable, 0)), false);
      assert.equal(wakeable(agent({ auto_scale: true, min_replicas: 1 }, 1)), false);
      assert.equal(wakeable({ ...agent(zeroable, 1), deployed_version: null }), false);
    });
  });

  describe('status', () => {
    const job = (states: Replica['state'][]): JobStatus => ({
      agentId: 'agt_1', version: 2, count: 0, events: [],
      replicas: states.map((state, index) => ({ id: `r${index}`, version: 2, state, address: null, restarts: 0, startedAt: null, error: null })),
    });

    it('shows a parked agent as running with 0 replicas, and one stopped by its owner as stopped', () => {
      assert.deepEqual(observedState(0, job([]), 'running', true), { status: 'running', replicas: 0, error: null });
      assert.deepEqual(observedState(0, null, 'running', true), { status: 'running', replicas: 0, error: null });
      assert.deepEqual(observedState(0, job([]), 'running', false), { status: 'stopped', replicas: 0, error: null });
    });

    it('counts the replica still stopping while it parks', () => {
      assert.deepEqual(observedState(0, job(['running']), 'running', true), { status: 'running', replicas: 1, error: null });
    });
  });

  describe('wake events (contract/edge-keys.ts)', () => {
    it('round-trips and refuses anything else', () => {
      for (const event of [{ event: 'routable', slug: 'bot-1a2b' }, { event: 'refused', slug: 'bot-1a2b' }] as const) {
        assert.deepEqual(parseWakeEvent(formatWakeEvent(event)), event);
      }
      assert.equal(formatWakeEvent({ event: 'routable', slug: 'bot-1a2b' }), 'routable bot-1a2b');
      for (const junk of ['', 'routable', 'woken bot', 'routable a b']) assert.equal(parseWakeEvent(junk), undefined, junk);
    });
  });
});
