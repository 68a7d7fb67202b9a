import { strict as assert } from 'node:assert';
import type { Redis } from 'ioredis';
import { FixedWindowLimiter } from '../control/services/rate-limiter.js';
import { connectTestRedis } from './support/edge-authz.js';
import { ManualClock } from './support/manual-clock.js';

/** The control API's fixed windows (registration, SSO starts, agents' session calls), on a real Redis. */
describe('FixedWindowLimiter', function () {
  let redis: Redis;
  let clock: ManualClock;
  let limiter: FixedWindowLimiter;

  beforeEach(function () {
    redis = connectTestRedis();
    // 10 s into a minute window: 50 s of it left.
    clock = new ManualClock(new Date(Date.UTC(2026, 10, 27, 12, 0, 10)));
    limiter = new FixedWindowLimiter(redis, clock);
  });

  afterEach(function () {
    redis.disconnect();
  });

  it('allows `limit` hits in a window, refuses the next with the seconds until the window ends, and starts again in the next window', async function () {
    const decisions = [];
    for (let i = 0; i < 4; i += 1) decisions.push(await limiter.hit('caller', 3));
    assert.deepEqual(
      decisions.map((decision) => decision.allowed),
      [true, true, true, false],
    );
    assert.equal(decisions[3]!.retryAfterSeconds, 50);
    clock.advance(50_000);
    assert.equal((await limiter.hit('caller', 3)).allowed, true, 'a new window counts from zero');
  });

  it('gives every counter an expiry from its first hit, so no window outlives two of its length', async function () {
    await limiter.hit('expiring', 5, 1_000);
    await limiter.hit('expiring', 5, 1_000);
    const [key] = await redis.keys(`${redis.options.keyPrefix}rl:expiring:*`);
    assert.ok(key, 'the counter is in Redis');
    const ttl = await redis.ttl(key.slice(redis.options.keyPrefix!.length));
    assert.ok(ttl > 0 && ttl <= 2, `the counter expires within two windows of 1 s (ttl ${ttl})`);
  });

  it('keeps keys and window lengths apart: another caller, or an hour window, has its own count', async function () {
    assert.equal((await limiter.hit('a', 1)).allowed, true);
    assert.equal((await limiter.hit('a', 1)).allowed, false);
    assert.equal((await limiter.hit('b', 1)).allowed, true);
    assert.equal((await limiter.hit('a', 1, 3_600_000)).allowed, true);
  });

  it('counts again after Redis forgets its scripts (SCRIPT FLUSH, as after a restart)', async function () {
    await limiter.hit('flushed', 2);
    await redis.script('FLUSH');
    assert.equal((await limiter.hit('flushed', 2)).allowed, true);
    assert.equal((await limiter.hit('flushed', 2)).allowed, false);
  });
});
