import assert from 'node:assert/strict';
import { loadConfig } from '../control/config/config.js';
import { ConfigError } from '../contract/settings-reader.js';

describe('deployment history setting (control/config/config.ts)', () => {
  const base = {
    DATABASE_URL: 'postgres://u:p@127.0.0.1:5432/db',
    REDIS_URL: 'redis://127.0.0.1:6379',
    MASTER_KEY: Buffer.alloc(32, 7).toString('base64'),
  };

  it('keeps 50 deployments per agent unless DEPLOYMENT_HISTORY_LIMIT says otherwise', () => {
    assert.equal(loadConfig(base).deploymentHistoryLimit, 50);
    assert.equal(loadConfig({ ...base, DEPLOYMENT_HISTORY_LIMIT: '1' }).deploymentHistoryLimit, 1);
    assert.equal(loadConfig({ ...base, DEPLOYMENT_HISTORY_LIMIT: '1000' }).deploymentHistoryLimit, 1000);
  });

  for (const bad of ['0', '1001', 'all']) {
    it(`refuses DEPLOYMENT_HISTORY_LIMIT=${bad} with its bounds`, () => {
      assert.throws(() => loadConfig({ ...base, DEPLOYMENT_HISTORY_LIMIT: bad }), (error: unknown) => {
        assert.ok(error instanceof ConfigError);
        assert.deepEqual(error.problems, [`DEPLOYMENT_HISTORY_LIMIT: expected an integer from 1 to 1000, got "${bad}"`]);
        return true;
      });
    });
  }
});
