import assert from 'node:assert/strict';
import { decideReplicas, type AutoscaleSignals } from '../control/domain/autoscale.js';

describe('auto-scaling decision (control/domain/autoscale.ts)', () => {
  const now = new Date('2031-05-06T07:08:00.000Z');
  const targets = { rpmPerReplica: 60, cpuPercent: 70, cooldownMs: 60_000 };
  const longAgo = new Date(now.getTime() - 10 * 60_000);
  const decide = (signals: Partial<AutoscaleSignals>) =>
    decideReplicas({ current: 1, min: 1, max: 10, requestsLastMinute: 0, cpuPercent: 0, lastScaleAt: longAgo, now, ...signals }, targets);

  describe('by requests per replica', () => {
    it('stays put when the last minute is exactly at the target per replica', () => {
      assert.deepEqual(decide({ current: 2, requestsLastMinute: 120 }), { desired: 2, reason: 'steady' });
    });

    it('scales out straight to the count the requests need', () => {
      assert.deepEqual(decide({ current: 1, requestsLastMinute: 121 }), { desired: 3, reason: 'load' });
      assert.deepEqual(decide({ current: 2, requestsLastMinute: 600 }), { desired: 10, reason: 'load' });
    });

    it('never goes past max_replicas however high the load', () => {
      assert.deepEqual(decide({ current: 4, max: 5, requestsLastMinute: 100_000 }), { desired: 5, reason: 'load' });
      assert.deepEqual(decide({ current: 5, max: 5, requestsLastMinute: 100_000 }), { desired: 5, reason: 'steady' });
    });

    it('never scales an agent with min_replicas 0 below one replica: going to 0 is parking, by the edge\'s idleness', () => {
      assert.deepEqual(decide({ current: 1, min: 0, requestsLastMinute: 0, cpuPercent: 0 }), { desired: 1, reason: 'steady' });
      assert.deepEqual(decide({ current: 2, min: 0, requestsLastMinute: 0, cpuPercent: 0 }), { desired: 1, reason: 'idle' });
    });

    it('scales in one replica at a time when the load has gone', () => {
      assert.deepEqual(decide({ current: 5, requestsLastMinute: 0 }), { desired: 4, reason: 'idle' });
      assert.deepEqual(decide({ current: 2, requestsLastMinute: 0 }), { desired: 1, reason: 'idle' });
    });

    it('never goes below min_replicas when idle', () => {
      assert.deepEqual(decide({ current: 2, min: 2, requestsLastMinute: 0 }), { desired: 2, reason: 'steady' });
    });
  });

  describe('by CPU', () => {
    it('adds replicas until the mean would be at the target', () => {
      // 2 replicas at 140 % ≈ 280 % of work: 4 replicas at 70 %.
      assert.deepEqual(decide({ current: 2, cpuPercent: 140 }), { desired: 4, reason: 'load' });
    });

    it('stays put exactly at the CPU target', () => {
      assert.deepEqual(decide({ current: 3, cpuPercent: 70 }), { desired: 3, reason: 'steady' });
    });

    it('takes the larger of the two signals', () => {
      assert.deepEqual(decide({ current: 1, requestsLastMinute: 170, cpuPercent: 150 }), { desired: 3, reason: 'load' });
      assert.deepEqual(decide({ current: 1, requestsLastMinute: 250, cpuPercent: 100 }), { desired: 5, reason: 'load' });
    });

    it('holds replicas that the CPU still needs though requests are few', () => {
      assert.deepEqual(decide({ current: 3, requestsLastMinute: 0, cpuPercent: 65 }), { desired: 3, reason: 'steady' });
    });

    it('ignores CPU when no replica reported any', () => {
      assert.deepEqual(decide({ current: 3, cpuPercent: null }), { desired: 2, reason: 'idle' });
    });
  });

  describe('cool-down', () => {
    const justNow = new Date(now.getTime() - 59_999);
    const exactlyCooled = new Date(now.getTime() - 60_000);

    it('waits before scaling in after a recent change', () => {
      assert.deepEqual(decide({ current: 3, lastScaleAt: justNow }), { desired: 3, reason: 'cooling_down' });
      assert.deepEqual(decide({ current: 3, lastScaleAt: exactlyCooled }), { desired: 2, reason: 'idle' });
    });

    it('waits before scaling out after a recent change', () => {
      assert.deepEqual(decide({ current: 2, requestsLastMinute: 600, lastScaleAt: justNow }), { desired: 2, reason: 'cooling_down' });
    });

    it('has nothing to wait for when no change is known', () => {
      assert.deepEqual(decide({ current: 3, lastScaleAt: null }), { desired: 2, reason: 'idle' });
    });

    it('restores the bounds at once, cool-down or not', () => {
      assert.deepEqual(decide({ current: 0, min: 2, lastScaleAt: justNow }), { desired: 2, reason: 'below_min' });
      assert.deepEqual(decide({ current: 7, max: 4, requestsLastMinute: 1000, lastScaleAt: justNow }), { desired: 4, reason: 'above_max' });
    });
  });
});
