import { strict as assert } from 'node:assert';
import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import { FixedWindowLimiter, LeasedWindowLimiter, type WindowCount } from '../control/services/rate-limiter.js';
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

/** A FixedWindowLimiter that counts its round trips to Redis. */
class CountingWindows extends FixedWindowLimiter {
  roundTrips = 0;

  override add(key: string, hits: number, windowMs: number): Promise<WindowCount> {
    this.roundTrips += 1;
    return super.add(key, hits, windowMs);
  }
}

/** The leased windows agents' session calls are counted in: shared by every copy of the control API, rarely a round trip. */
describe('LeasedWindowLimiter', function () {
  const connections: Redis[] = [];
  let clock: ManualClock;
  let keyPrefix: string;

  /** A copy of the control API: its own Redis connection and leases, the same keys as every other copy. */
  const copy = () => {
    const redis = connectTestRedis(keyPrefix);
    connections.push(redis);
    const windows = new CountingWindows(redis, clock);
    return { windows, limiter: new LeasedWindowLimiter(windows) };
  };

  beforeEach(function () {
    clock = new ManualClock(new Date(Date.UTC(2026, 10, 27, 12, 0, 10, 200)));
    keyPrefix = `leased_${randomBytes(4).toString('hex')}:`;
  });

  afterEach(function () {
    for (const redis of connections.splice(0)) redis.disconnect();
  });

  it('admits exactly the limit from one copy, asking Redis once per lease of 1/50 of it', async function () {
    const { limiter, windows } = copy();
    const key = 'leased-one';
    const decisions = [];
    for (let i = 0; i < 520; i += 1) decisions.push(await limiter.hit(key, 500, 1_000));
    assert.equal(decisions.filter((decision) => decision.allowed).length, 500);
    assert.deepEqual(decisions.slice(500).map((decision) => [decision.allowed, decision.retryAfterSeconds]), Array(20).fill([false, 1]));
    assert.equal(windows.roundTrips, 51, '50 leases of 10, then one that comes back empty; the refusals after it ask nothing');
  });

  it('never admits more than the limit across copies hitting at once, and loses at most a lease per copy', async function () {
    const copies = [copy(), copy(), copy()];
    const key = 'leased-many';
    const decisions = await Promise.all(Array.from({ length: 900 }, (_, i) => copies[i % 3]!.limiter.hit(key, 600, 1_000)));
    const admitted = decisions.filter((decision) => decision.allowed).length;
    assert.ok(admitted <= 600, `${admitted} admitted against a limit of 600`);
    assert.ok(admitted >= 600 - 3 * 12, `${admitted} admitted: more went unused than three leases of 12`);
  });

  it('takes one lease for hits that find none left at once, not one each', async function () {
    const { limiter, windows } = copy();
    const decisions = await Promise.all(Array.from({ length: 10 }, () => limiter.hit('leased-burst', 500, 1_000)));
    assert.ok(decisions.every((decision) => decision.allowed));
    assert.equal(windows.roundTrips, 1);
  });

  it('starts again in the next window, the spent one refused without a round trip', async function () {
    const { limiter, windows } = copy();
    const key = 'leased-next';
    assert.equal((await limiter.hit(key, 1, 1_000)).allowed, true);
    assert.equal((await limiter.hit(key, 1, 1_000)).allowed, false);
    const tripsWhenSpent = windows.roundTrips;
    assert.equal((await limiter.hit(key, 1, 1_000)).allowed, false);
    assert.equal(windows.roundTrips, tripsWhenSpent);
    clock.advance(800);
    assert.equal((await limiter.hit(key, 1, 1_000)).allowed, true, 'a new window counts from zero');
  });
});
