import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import pino from 'pino';
import { systemClock } from '../contract/clock.js';
import { edgeKeyNames, usageMonthOf } from '../contract/edge-keys.js';
import { loadAuthzConfig } from '../authz/config.js';
import { loadConfig } from '../control/config/config.js';
import { ConfigError } from '../contract/settings-reader.js';
import { UsageFlusher } from '../control/services/usage-flusher.js';
import { startControl, type TestControl } from './support/control-harness.js';
import { connectTestRedis, denialOf, startTestAuthz, type TestAuthz } from './support/edge-authz.js';

/**
 * REDIS_KEY_PREFIX: two installations (here, two controls, each with the authz that is
 * given its prefix) share one Redis without seeing each other's edge projection or usage.
 */
describe('Redis key prefix', function () {
  this.timeout(60_000);
  let first: TestControl;
  let second: TestControl;
  let firstEdge: TestAuthz;
  let secondEdge: TestAuthz;
  let firstAuthzRedis: Redis;
  let secondAuthzRedis: Redis;
  let raw: Redis; // no prefix: what is really in Redis

  before(async () => {
    first = await startControl();
    second = await startControl();
    // authz connects on its own, with the prefix of the control it pairs with.
    firstAuthzRedis = connectTestRedis(first.config.redisKeyPrefix);
    secondAuthzRedis = connectTestRedis(second.config.redisKeyPrefix);
    firstEdge = await startTestAuthz({ redis: firstAuthzRedis, clock: systemClock, agentDomain: first.config.agentUrl.domain });
    secondEdge = await startTestAuthz({ redis: secondAuthzRedis, clock: systemClock, agentDomain: second.config.agentUrl.domain });
    raw = new Redis(process.env.TEST_REDIS_URL!, { maxRetriesPerRequest: 1 });
  });
  after(async () => {
    await firstEdge?.close();
    await secondEdge?.close();
    firstAuthzRedis?.disconnect();
    secondAuthzRedis?.disconnect();
    raw?.disconnect();
    await first?.close();
    await second?.close();
  });

  /** A public agent on `control` with a routable replica, as the runner projects one. */
  async function publicAgent(control: TestControl) {
    const { token } = await control.signUp();
    const created = await control.request('POST', '/agents', { token, body: { name: 'prefixed', api_key: 'sk-test', access: 'public' } });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const host = new URL(created.body.url).hostname;
    const slug = host.split('.')[0]!;
    await control.redis.sadd(edgeKeyNames.upstreams(slug), '127.0.0.1:9');
    return { token, host, slug, id: created.body.id as string };
  }

  it('gives each control and its authz their own edge projection', async () => {
    assert.notEqual(first.config.redisKeyPrefix, second.config.redisKeyPrefix);
    const agent = await publicAgent(first);

    assert.equal(await raw.exists(first.config.redisKeyPrefix + edgeKeyNames.agent(agent.slug)), 1);
    assert.equal(await raw.exists(edgeKeyNames.agent(agent.slug)), 0, 'nothing is written without the prefix');
    assert.equal(await second.redis.exists(edgeKeyNames.agent(agent.slug)), 0);

    assert.equal((await firstEdge.client.check({ host: agent.host })).http_response, 'ok_response');
    assert.equal(denialOf(await secondEdge.client.check({ host: agent.host })).httpStatus, 'NotFound');

    // The other control's rebuild drops agents it does not know, but only under its own prefix.
    await second.control.services.edge.rebuild();
    assert.equal((await firstEdge.client.check({ host: agent.host })).http_response, 'ok_response');
  });

  it('flushes the usage authz counted under the prefix into Postgres, and only its own', async () => {
    const agent = await publicAgent(first);
    for (let i = 0; i < 3; i += 1) assert.equal((await firstEdge.client.check({ host: agent.host })).http_response, 'ok_response');
    const month = usageMonthOf(new Date());
    const counter = first.config.redisKeyPrefix + edgeKeyNames.usage(agent.slug, month);
    assert.equal(await raw.get(counter), '3');

    const logger = pino({ level: 'silent' });
    await new UsageFlusher(second.db, second.redis, second.clock, 60_000, logger).flush();
    assert.equal(await raw.get(counter), '3', "the other control's flusher does not see the counter");

    await new UsageFlusher(first.db, first.redis, first.clock, 60_000, logger).flush();
    assert.equal(await raw.exists(counter), 0, 'the counter left Redis');
    const rows = await first.db('request_counts').where({ agent_id: agent.id }).select('month', 'count');
    assert.deepEqual(rows.map((row) => ({ month: row.month, count: Number(row.count) })), [{ month, count: 3 }]);
  });

  it('is refused by both sides when it would change the keys\' hash tag or a SCAN pattern', () => {
    const control = { DATABASE_URL: 'postgres://localhost/x', REDIS_URL: 'redis://localhost', MASTER_KEY: Buffer.alloc(32).toString('base64') };
    for (const prefix of ['a{b}:', 'tenant*:']) {
      assert.throws(() => loadConfig({ ...control, REDIS_KEY_PREFIX: prefix }), (error: unknown) =>
        error instanceof ConfigError && error.problems.some((problem) => problem.startsWith('REDIS_KEY_PREFIX:')));
      assert.throws(() => loadAuthzConfig({ REDIS_URL: 'redis://localhost', REDIS_KEY_PREFIX: prefix }), /REDIS_KEY_PREFIX:/);
    }
    assert.equal(loadConfig({ ...control, REDIS_KEY_PREFIX: 'eu-1:' }).redisKeyPrefix, 'eu-1:');
    assert.equal(loadAuthzConfig({ REDIS_URL: 'redis://localhost', REDIS_KEY_PREFIX: 'eu-1:', AUTHZ_GRPC_SOCKET: '/run/agent-platform/authz.sock' }).redisKeyPrefix, 'eu-1:');
  });
});
