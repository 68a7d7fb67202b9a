import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import pino from 'pino';
import { systemClock } from '../contract/clock.js';
import type { ManualClock } from './support/manual-clock.js';
import { scanKeys } from '../control/db/redis.js';
import { UsageFlusher } from '../control/services/usage-flusher.js';
import { monthOf } from '../control/services/usage-service.js';
import { startControl, type TestControl } from './support/control-harness.js';
import type { Redis } from 'ioredis';
import { connectTestRedis, startTestAuthz, type TestAuthz } from './support/edge-authz.js';
import { runReplica } from './support/in-memory-driver.js';

const logger = pino({ level: 'silent' });

/**
 * Requests are counted by the real authz (one INCR per allowed Check) and reach the bill
 * through the flusher; nothing is lost or doubled across flushes and restarts.
 */
describe('account usage: requests counted at the edge', function () {
  this.timeout(60_000);
  let control: TestControl;
  let authz: TestAuthz;
  let authzRedis: Redis; // its own connection: authz outlives the control API restarts below

  before(async () => {
    control = await startControl();
    authzRedis = connectTestRedis(control.config.redisKeyPrefix); // the projection's keys are under the control's prefix
    authz = await startTestAuthz({ redis: authzRedis, clock: systemClock, agentDomain: control.config.agentUrl.domain });
  });
  after(async () => {
    await authz?.close();
    authzRedis?.disconnect();
    await control?.close();
  });

  const flusherOn = (on: TestControl) => new UsageFlusher(on.db, on.redis, on.clock, 60_000, logger);
  const requestsOf = async (on: TestControl, token: string) => {
    (on.clock as ManualClock).set(new Date()); // authz counts by the wall clock's month
    const usage = await on.request('GET', '/account/usage', { token });
    assert.equal(usage.status, 200, JSON.stringify(usage.body));
    return usage.body.period.requests as number;
  };

  async function publicAgent(token: string) {
    const created = await control.request('POST', '/agents', { token, body: { name: 'counted', api_key: 'sk-test', access: 'public', deploy: { replicas: 1 } } });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    // A routable replica, as the orchestrator reports it: authz allows (and counts) only then.
    const slug = new URL(created.body.url).hostname.split('.')[0]!;
    await runReplica(control, { id: created.body.id, slug }, '127.0.0.1:9');
    return { id: created.body.id as string, slug };
  }

  async function callThroughEdge(slug: string, times: number) {
    for (let i = 0; i < times; i += 1) {
      const response = await authz.client.check({ host: `${slug}.${control.config.agentUrl.domain}`, path: '/invoke', method: 'POST' });
      assert.equal(response.http_response, 'ok_response', JSON.stringify(response));
    }
  }

  it('shows requests live, keeps them through a flush, and flushes each count once', async () => {
    const { token } = await control.signUp();
    const agent = await publicAgent(token);
    await callThroughEdge(agent.slug, 5);
    assert.equal(await requestsOf(control, token), 5, 'live from Redis before any flush');

    await flusherOn(control).flush();
    assert.equal(await control.redis.exists(`edge:usage:{${agent.slug}}:${monthOf(new Date())}`), 0, 'the counter left Redis');
    assert.equal(await requestsOf(control, token), 5, 'from Postgres after the flush');

    await callThroughEdge(agent.slug, 3);
    assert.equal(await requestsOf(control, token), 8);
    await flusherOn(control).flush();
    await flusherOn(control).flush(); // nothing new: nothing added
    assert.equal(await requestsOf(control, token), 8);
  });

  it('loses nothing across a restart of the control API', async () => {
    const { token } = await control.signUp();
    const agent = await publicAgent(token);
    await callThroughEdge(agent.slug, 4);
    await flusherOn(control).flush();
    await callThroughEdge(agent.slug, 2); // counted in Redis, not flushed when the control API goes

    const database = control.database;
    await control.crash();
    const restarted = await startControl({}, { resume: { database } });
    control = restarted;
    // Same database: the session survives the restart.
    assert.equal(await requestsOf(control, token), 6);
    await flusherOn(control).flush();
    assert.equal(await requestsOf(control, token), 6);
  });

  it('finishes a flush a crash interrupted, without counting it twice', async () => {
    const { token } = await control.signUp();
    const agent = await publicAgent(token);
    const month = monthOf(new Date());
    // Crash after RENAME, before the transaction: the count is applied on the next pass.
    await control.redis.set(`edge:usage-flushing:{${agent.slug}}:${month}:${randomUUID()}`, '7');
    // Crash after the transaction, before DEL: the flush id is known, so it is only deleted.
    const applied = randomUUID();
    await control.db('usage_flushes').insert({ flush_id: applied, flushed_at: new Date() });
    await control.redis.set(`edge:usage-flushing:{${agent.slug}}:${month}:${applied}`, '100');

    await flusherOn(control).flush();
    assert.equal(await requestsOf(control, token), 7);
    assert.deepEqual(await scanKeys(control.redis, `edge:usage-flushing:{${agent.slug}}:*`), []);
  });
});
