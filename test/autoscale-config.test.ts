import assert from 'node:assert/strict';
import { ConfigError, loadConfig } from '../control/config.js';

describe('auto-scaling settings (control/config.ts)', () => {
  const base = {
    DATABASE_URL: 'postgres://u:p@127.0.0.1:5432/db',
    REDIS_URL: 'redis://127.0.0.1:6379',
    MASTER_KEY: Buffer.alloc(32, 7).toString('base64'),
  };

  it('defaults to a 15 s interval, 60 requests a minute and 70 % CPU per replica, and a 60 s cool-down', () => {
    assert.deepEqual({ ...loadConfig(base).autoscale }, { intervalMs: 15_000, targetRpmPerReplica: 60, targetCpuPercent: 70, cooldownMs: 60_000 });
  });

  it('reads each setting', () => {
    const config = loadConfig({
      ...base,
      AUTOSCALE_INTERVAL_MS: '500',
      AUTOSCALE_TARGET_RPM_PER_REPLICA: '120',
      AUTOSCALE_TARGET_CPU_PERCENT: '50',
      AUTOSCALE_COOLDOWN_MS: '0',
    });
    assert.deepEqual({ ...config.autoscale }, { intervalMs: 500, targetRpmPerReplica: 120, targetCpuPercent: 50, cooldownMs: 0 });
  });

  it('names every bad value at once', () => {
    assert.throws(
      () => loadConfig({ ...base, AUTOSCALE_INTERVAL_MS: '10', AUTOSCALE_TARGET_RPM_PER_REPLICA: '0', AUTOSCALE_TARGET_CPU_PERCENT: 'high', AUTOSCALE_COOLDOWN_MS: '-1' }),
      (error: unknown) => {
        assert.ok(error instanceof ConfigError);
        for (const name of ['AUTOSCALE_INTERVAL_MS', 'AUTOSCALE_TARGET_RPM_PER_REPLICA', 'AUTOSCALE_TARGET_CPU_PERCENT', 'AUTOSCALE_COOLDOWN_MS']) {
          assert.ok(error.problems.some((problem) => problem.startsWith(`${name}:`)), name);
        }
        return true;
      },
    );
  });
});
