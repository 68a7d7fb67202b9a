import assert from 'node:assert/strict';
import type { Redis } from 'ioredis';
import { ManualClock } from './support/manual-clock.js';
import { edgeKeyNames } from '../contract/edge-keys.js';
import { createRequestFigureRecorder } from '../contract/request-figure-recorder.js';
import {
  addHash,
  addRequest,
  emptyTally,
  figuresOf,
  latencyBucketOf,
  latencyQuantileMs,
  LATENCY_BOUNDS_MS,
  REQUEST_FIGURES_TTL_SECONDS,
  tallyIncrements,
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
});
