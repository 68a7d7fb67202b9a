import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { connectDatabase } from '../control/db/database.js';
import { dependencyOutage } from '../control/db/dependency-outage.js';
import { connectRedis } from '../control/db/redis.js';
import { freePort } from '../scripts/lib/local-services.js';

/**
 * Which real errors the control API answers as a dependency outage (503) and which stay
 * bugs (500): taken from real Postgres and Redis clients, not built by hand.
 */
describe('dependency outages: which errors are a 503', () => {
  const failureOf = async (work: () => Promise<unknown>): Promise<unknown> => {
    try {
      await work();
    } catch (error) {
      return error;
    }
    throw new Error('expected the call to fail');
  };

  it('takes a refused Postgres connection for DATABASE_UNAVAILABLE', async () => {
    const db = connectDatabase(`postgres://nobody:secret@127.0.0.1:${await freePort()}/none`, { min: 0, max: 1 });
    try {
      const error = await failureOf(() => db.raw('select 1'));
      assert.equal(dependencyOutage(error)?.code, 'DATABASE_UNAVAILABLE', String(error));
      assert.equal(dependencyOutage(error)?.details.retry_after, 5);
      // A transaction takes its connection another way (knex's Transaction.acquireConnection).
      const inTransaction = await failureOf(() => db.transaction(async (trx) => trx.raw('select 1')));
      assert.equal(dependencyOutage(inTransaction)?.code, 'DATABASE_UNAVAILABLE', String(inTransaction));
    } finally {
      await db.destroy();
    }
  });

  it('leaves a wrong statement, and a refused connection of anything but the database, as errors of ours', async () => {
    const db = connectDatabase(process.env.TEST_TEMPLATE_DATABASE_URL!, { min: 0, max: 1 });
    try {
      const syntax = await failureOf(() => db.raw('selec 1'));
      assert.equal(dependencyOutage(syntax), undefined, String(syntax));
      const nul = await failureOf(() => db.raw('select ?::text', ['a\u0000b']));
      assert.equal(dependencyOutage(nul), undefined, String(nul));
    } finally {
      await db.destroy();
    }
    const port = await freePort();
    const refused = await new Promise<Error>((resolve) => connect(port, '127.0.0.1').once('error', resolve));
    assert.equal((refused as NodeJS.ErrnoException).code, 'ECONNREFUSED');
    assert.equal(dependencyOutage(refused), undefined);
  });

  it('takes a Redis that cannot be reached for CACHE_UNAVAILABLE, and a refused command for an error of ours', async () => {
    const down = connectRedis(`redis://127.0.0.1:${await freePort()}`);
    try {
      const error = await failureOf(() => down.get('key'));
      assert.equal(dependencyOutage(error)?.code, 'CACHE_UNAVAILABLE', String(error));
    } finally {
      down.disconnect();
    }
    const up = connectRedis(process.env.TEST_REDIS_URL!);
    try {
      const wrong = await failureOf(() => up.call('no-such-command'));
      assert.equal(dependencyOutage(wrong), undefined, String(wrong));
    } finally {
      up.disconnect();
    }
  });

  it('follows `cause`, for code that wraps what it caught', async () => {
    const db = connectDatabase(`postgres://nobody:secret@127.0.0.1:${await freePort()}/none`, { min: 0, max: 1 });
    try {
      const error = await failureOf(() => db.raw('select 1'));
      assert.equal(dependencyOutage(new Error('listing agents failed', { cause: error }))?.code, 'DATABASE_UNAVAILABLE');
    } finally {
      await db.destroy();
    }
  });
});
