import assert from 'node:assert/strict';
import { loadConfig } from '../control/config/config.js';
import { ConfigError } from '../contract/settings-reader.js';

describe('auto-scaling settings (control/config/config.ts)', () => {
  const base = {
    DATABASE_URL: 'postgres://u:p@127.0.0.1:5432/db',
    REDIS_URL: 'redis://127.0.0.1:6379',
    MASTER_KEY: Buffer.alloc(32, 7).toString('base64'),
  };

  it('defaults to a 15 s interval, 60 requests a minute and 70 % CPU per replica, a 60 s cool-down and a 30 s CPU warm-up', () => {
    assert.deepEqual({ ...loadConfig(base).autoscale }, { intervalMs: 15_000, targetRpmPerReplica: 60, targetCpuPercent: 70, cooldownMs: 60_000, cpuWarmupMs: 30_000 });
  });

  it('reads each setting', () => {
    const config = loadConfig({
      ...base,
      AUTOSCALE_INTERVAL_MS: '500',
      AUTOSCALE_TARGET_RPM_PER_REPLICA: '120',
      AUTOSCALE_TARGET_CPU_PERCENT: '50',
      AUTOSCALE_COOLDOWN_MS: '0',
      AUTOSCALE_CPU_WARMUP_MS: '3000',
    });
    assert.deepEqual({ ...config.autoscale }, { intervalMs: 500, targetRpmPerReplica: 120, targetCpuPercent: 50, cooldownMs: 0, cpuWarmupMs: 3000 });
  });

  it('names every bad value at once, with its bounds', () => {
    assert.throws(
      () => loadConfig({
        ...base,
        AUTOSCALE_INTERVAL_MS: '10',
        AUTOSCALE_TARGET_RPM_PER_REPLICA: '0',
        AUTOSCALE_TARGET_CPU_PERCENT: 'high',
        AUTOSCALE_COOLDOWN_MS: '-1',
        AUTOSCALE_CPU_WARMUP_MS: '2h',
      }),
      (error: unknown) => {
        assert.ok(error instanceof ConfigError);
        assert.deepEqual([...error.problems].sort(), [
          'AUTOSCALE_COOLDOWN_MS: expected an integer from 0 to 86400000, got "-1"',
          'AUTOSCALE_CPU_WARMUP_MS: expected an integer from 0 to 3600000, got "2h"',
          'AUTOSCALE_INTERVAL_MS: expected an integer from 100 to 3600000, got "10"',
          'AUTOSCALE_TARGET_CPU_PERCENT: expected an integer from 1 to 1000, got "high"',
          'AUTOSCALE_TARGET_RPM_PER_REPLICA: expected an integer from 1 to 1000000, got "0"',
        ]);
        return true;
      },
    );
  });
});
