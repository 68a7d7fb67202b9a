import assert from 'node:assert/strict';
import type { Redis } from 'ioredis';
import { ManualClock } from './support/manual-clock.js';
import { edgeKeyNames } from '../contract/edge-keys.js';
import { createRequestFigureRecorder } from '../contract/request-figure-recorder.js';
import {
  addHash,
  addRequest,
  addVersionedHash,
  canaryIncrements,
  CANARY_FIELD_PREFIX,
  emptyTally,
  emptyVersionTallies,
  figuresOf,
  isCanaryVersion,
  latencyBucketOf,
  latencyQuantileMs,
  LATENCY_BOUNDS_MS,
  REQUEST_FIGURES_TTL_SECONDS,
  stableTallyOf,
  tallyIncrements,
  versionTalliesOf,
} from '../contract/request-figures.js';
import { RequestFiguresReader } from '../control/edge/request-figures.js';
import { scanKeys } from '../control/db/redis.js';
import { connectTestRedis } from './support/edge-authz.js';

/**
 * The arithmetic of agents' request figures (contract/request-figures.ts), the recorder the
 * edge tallies into and the reader the control API sums with, on the run's real Redis.
 */
describe('request figures: bucket maths', () => {
  it('puts a latency in the first bucket whose bound it does not exceed, anything slower in the overflow', () => {
    assert.equal(latencyBucketOf(0), 0);
    assert.equal(latencyBucketOf(1), 0, 'bounds are inclusive, as Prometheus le buckets');
    assert.equal(latencyBucketOf(1.01), 1);
    assert.equal(latencyBucketOf(250), LATENCY_BOUNDS_MS.indexOf(250));
    assert.equal(latencyBucketOf(300_000), LATENCY_BOUNDS_MS.length - 1);
    assert.equal(latencyBucketOf(300_001), LATENCY_BOUNDS_MS.length);
  });

  it('counts 5xx as errors, not 4xx, and sums latency in whole microseconds', () => {
    const tally = emptyTally();
    for (const [status, ms] of [[200, 0.4], [404, 3], [500, 12.3456], [503, 7], [599, 1]] as const) addRequest(tally, status, ms);
    assert.equal(tally.count, 5);
    assert.equal(tally.errors, 3);
    assert.equal(tally.latencySumUs, 400 + 3_000 + 12_346 + 7_000 + 1_000);
    const figures = figuresOf(tally);
    assert.equal(figures.requestCount, 5);
    assert.equal(figures.errorCount, 3);
    assert.equal(figures.avgLatencyMs, 23.746 / 5);
  });

  it("interpolates the p95 inside its bucket as Prometheus's histogram_quantile does", () => {
    // 100 requests: 90 in (0, 1], 10 in (10, 25]. rank 95 is the 5th of the 10 in (10, 25]: 10 + 15 × 5/10.
    const buckets = new Array<number>(LATENCY_BOUNDS_MS.length + 1).fill(0);
    buckets[latencyBucketOf(0.5)] = 90;
    buckets[latencyBucketOf(20)] = 10;
    assert.equal(latencyQuantileMs(0.95, buckets), 17.5);
    // All in the lowest bucket: from 0 up to its bound.
    assert.equal(latencyQuantileMs(0.95, [20, ...new Array<number>(LATENCY_BOUNDS_MS.length).fill(0)]), 0.95);
    // In the overflow bucket: the highest finite bound, never Infinity.
    const slow = new Array<number>(LATENCY_BOUNDS_MS.length + 1).fill(0);
    slow[LATENCY_BOUNDS_MS.length] = 3;
    assert.equal(latencyQuantileMs(0.95, slow), 300_000);
    assert.equal(latencyQuantileMs(0.95, new Array<number>(LATENCY_BOUNDS_MS.length + 1).fill(0)), 0, 'no requests: 0, not NaN');
  });

  it("writes only non-zero fields and reads back what it wrote, ignoring what it does not know", () => {
    const tally = emptyTally();
    addRequest(tally, 200, 4);
    addRequest(tally, 502, 40);
    const increments = tallyIncrements(tally);
    assert.deepEqual(increments, [['count', 2], ['errors', 1], ['latency_us', 44_000], ['le_2', 1], ['le_5', 1]]);
    const read = emptyTally();
    addHash(read, { ...Object.fromEntries(increments.map(([field, n]) => [field, String(n)])), stray: '9', le_0: 'NaN', le_1: '-4' });
    assert.deepEqual(read, tally);
  });
});

/** The tally of these requests, as the recorder adds them. */
function tallyOf(...requests: [status: number, ms: number][]) {
  const tally = emptyTally();
  for (const [status, ms] of requests) addRequest(tally, status, ms);
  return tally;
}

describe('request figures: per version (canary deploys, issue 36)', () => {
  /** A hash as the recorder leaves it: every version's fields, then the canary's share prefixed. */
  const storedHash = (all: ReturnType<typeof emptyTally>, canary: ReturnType<typeof emptyTally>) =>
    Object.fromEntries([...tallyIncrements(all), ...canaryIncrements(canary)].map(([field, n]) => [field, String(n)]));

  it('is the canary only when the version is exactly `canary`', () => {
    assert.equal(isCanaryVersion('canary'), true);
    for (const version of ['stable', undefined, null, '', 'Canary', 'canary ', 'beta']) assert.equal(isCanaryVersion(version), false, String(version));
  });

  it("writes a canary's share under canary_ fields, the same names otherwise", () => {
    const canary = tallyOf([500, 40]);
    assert.equal(CANARY_FIELD_PREFIX, 'canary_');
    assert.deepEqual(canaryIncrements(canary), [['canary_count', 1], ['canary_errors', 1], ['canary_latency_us', 40_000], ['canary_le_5', 1]]);
  });

  it('splits a stored hash into every version and the canary, and addHash still reads every version only', () => {
    const all = tallyOf([200, 4], [502, 40], [200, 0.5]);
    const canary = tallyOf([502, 40]);
    const hash = storedHash(all, canary);
    assert.deepEqual(versionTalliesOf(hash), { all, canary });
    const totals = emptyTally();
    addHash(totals, hash);
    assert.deepEqual(totals, all, 'readers that know nothing of canaries see the totals, as before');
    assert.deepEqual(versionTalliesOf(storedHash(all, emptyTally())).canary, emptyTally(), 'no canary_ fields: no canary requests');
  });

  it('gives stable = all − canary, field by field, summed over seconds', () => {
    const tallies = emptyVersionTallies();
    addVersionedHash(tallies, storedHash(tallyOf([200, 4], [502, 40]), tallyOf([502, 40])));
    addVersionedHash(tallies, storedHash(tallyOf([200, 4], [200, 20]), tallyOf([200, 20])));
    assert.deepEqual(stableTallyOf(tallies), tallyOf([200, 4], [200, 4]));
    assert.deepEqual(tallies.canary, tallyOf([502, 40], [200, 20]));
  });

  it('never gives a stable figure below 0, whatever a hash holds', () => {
    const stable = stableTallyOf(versionTalliesOf({ count: '1', canary_count: '3', canary_errors: '2', canary_le_0: '1' }));
    assert.deepEqual(stable, emptyTally());
  });
});

describe('request figures: recorder and reader on Redis', function () {
  let redis: Redis;
  let now: number;
  const agentId = 'agt_figures1';

  beforeEach(() => {
    redis = connectTestRedis();
    now = Date.UTC(2031, 2, 31, 12, 0, 0, 250);
  });
  afterEach(async () => {
    const keys = await scanKeys(redis, 'edge:requests:*');
    if (keys.length > 0) await redis.del(...keys);
    redis.disconnect();
  });

  const newRecorder = () =>
    createRequestFigureRecorder({
      redis,
      nowMs: () => now,
      flushIntervalMs: 3_600_000, // flushed by hand here
      onError: (error) => assert.fail(error),
    });
  const second = (ms: number) => Math.floor(ms / 1000);

  it('writes nothing per request: one hash per agent and second, on flush, with a TTL past the window', async () => {
    const recorder = newRecorder();
    for (let i = 0; i < 100; i += 1) recorder.record(agentId, 200, 2);
    assert.deepEqual(await scanKeys(redis, 'edge:requests:*'), [], 'nothing in Redis before the flush');
    now += 1_000;
    recorder.record(agentId, 500, 30);
    recorder.record('agt_other', 200, 1);
    await recorder.close();

    const keys = (await scanKeys(redis, 'edge:requests:*')).sort();
    assert.deepEqual(keys, [
      edgeKeyNames.requestFigures('agt_figures1', second(now) - 1),
      edgeKeyNames.requestFigures('agt_figures1', second(now)),
      edgeKeyNames.requestFigures('agt_other', second(now)),
    ].sort());
    assert.deepEqual(await redis.hgetall(edgeKeyNames.requestFigures(agentId, second(now) - 1)), { count: '100', latency_us: '200000', le_1: '100' });
    const ttl = await redis.ttl(edgeKeyNames.requestFigures(agentId, second(now)));
    assert.ok(ttl > 60 && ttl <= REQUEST_FIGURES_TTL_SECONDS, `ttl ${ttl}`);
  });

  it('adds up the seconds of several edge processes, and the reader sums the last 60 s only', async () => {
    const [first, other] = [newRecorder(), newRecorder()];
    first.record(agentId, 200, 10);
    other.record(agentId, 503, 30);
    now -= 59_000; // still inside the window the reader will look at
    first.record(agentId, 200, 20);
    now -= 1_000; // 60 s before the read: outside it
    other.record(agentId, 200, 1_000);
    await Promise.all([first.close(), other.close()]);

    const reader = new RequestFiguresReader(redis, new ManualClock(new Date(now + 60_000)));
    const figures = await reader.lastMinute(agentId);
    assert.equal(figures.requestCount, 3, 'both processes counted, the old second left out');
    assert.equal(figures.errorCount, 1);
    assert.equal(figures.avgLatencyMs, 20);
    // 10 ms in (5, 10], 20 in (10, 25], 30 in (25, 50]: rank 2.85 is 0.85 into (25, 50].
    assert.ok(Math.abs(figures.p95LatencyMs - (25 + 25 * 0.85)) < 1e-9, `p95 ${figures.p95LatencyMs}`);
    assert.deepEqual(await reader.lastMinute('agt_nothing'), { requestCount: 0, errorCount: 0, avgLatencyMs: 0, p95LatencyMs: 0 });
  });

  it("adds a canary's requests to the totals and again under canary_ fields of the same hash and TTL", async () => {
    const recorder = newRecorder();
    recorder.record(agentId, 200, 2);
    recorder.record(agentId, 200, 2, false);
    recorder.record(agentId, 503, 30, true);
    recorder.record('agt_stable_only', 200, 2);
    await recorder.close();

    assert.deepEqual(await scanKeys(redis, 'edge:requests:*').then((keys) => keys.sort()), [
      edgeKeyNames.requestFigures(agentId, second(now)),
      edgeKeyNames.requestFigures('agt_stable_only', second(now)),
    ].sort(), 'no key of its own for the canary');
    assert.deepEqual(await redis.hgetall(edgeKeyNames.requestFigures(agentId, second(now))), {
      count: '3', errors: '1', latency_us: '34000', le_1: '2', le_5: '1',
      canary_count: '1', canary_errors: '1', canary_latency_us: '30000', canary_le_5: '1',
    });
    assert.deepEqual(await redis.hgetall(edgeKeyNames.requestFigures('agt_stable_only', second(now))), { count: '1', latency_us: '2000', le_1: '1' }, 'no canary_ fields without canary requests');
    const ttl = await redis.ttl(edgeKeyNames.requestFigures(agentId, second(now)));
    assert.ok(ttl > 60 && ttl <= REQUEST_FIGURES_TTL_SECONDS, `ttl ${ttl}`);
  });

  it('reads per version: stable = total − canary, over the window asked for; lastMinute keeps every version', async () => {
    const [first, other] = [newRecorder(), newRecorder()];
    first.record(agentId, 200, 10);
    other.record(agentId, 500, 30, true);
    first.record(agentId, 200, 20, true);
    now -= 20_000;
    first.record(agentId, 503, 4); // inside 60 s, outside a 10 s window
    other.record(agentId, 200, 4, true);
    await Promise.all([first.close(), other.close()]);

    const reader = new RequestFiguresReader(redis, new ManualClock(new Date(now + 20_000)));
    const minute = await reader.byVersion(agentId);
    assert.deepEqual(minute.stable, figuresOf(tallyOf([200, 10], [503, 4])));
    assert.deepEqual(minute.canary, figuresOf(tallyOf([500, 30], [200, 20], [200, 4])));
    assert.deepEqual(await reader.lastMinute(agentId), figuresOf(tallyOf([200, 10], [500, 30], [200, 20], [503, 4], [200, 4])), 'the totals count the canary too');

    const tenSeconds = await reader.byVersion(agentId, 10);
    assert.deepEqual(tenSeconds.stable, figuresOf(tallyOf([200, 10])));
    assert.deepEqual(tenSeconds.canary, figuresOf(tallyOf([500, 30], [200, 20])));
    const none = { requestCount: 0, errorCount: 0, avgLatencyMs: 0, p95LatencyMs: 0 };
    assert.deepEqual(await reader.byVersion('agt_nothing'), { stable: none, canary: none });
    for (const window of [0, 61, 1.5]) await assert.rejects(reader.byVersion(agentId, window), RangeError);
  });
});
