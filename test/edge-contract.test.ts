import assert from 'node:assert/strict';
import {
  edgeAgentHash,
  edgeKeyNames,
  parseRequestFiguresKey,
  parseUsageFlushingKey,
  parseUsageKey,
  secondsToWindowEnd,
  usageMonthOf,
  WAKE_REFUSAL_TTL_SECONDS,
  WAKE_REFUSED_PREFIX,
  WAKE_REQUESTED,
  wakeEventsChannel,
  windowOf,
} from '../contract/edge-keys.js';
import { FIGURES_WINDOW_SECONDS, LATENCY_BOUNDS_MS, REQUEST_FIGURE_FIELDS, REQUEST_FIGURES_TTL_SECONDS } from '../contract/request-figures.js';

/**
 * The edge projection's format, pinned: the control API writes it, authz reads it, and a
 * running Redis holds it across upgrades of either. A change here is a change of the
 * contract (docs/contract.md), to be made on both sides in one release.
 */
describe('the control↔edge contract', () => {
  const slug = 'support-bot-3f9a';

  it('names every key of an agent with the slug as its Redis Cluster hash tag', () => {
    assert.equal(edgeKeyNames.agent(slug), 'edge:agent:{support-bot-3f9a}');
    assert.equal(edgeKeyNames.keys(slug), 'edge:keys:{support-bot-3f9a}');
    assert.equal(edgeKeyNames.upstreams(slug), 'edge:upstreams:{support-bot-3f9a}');
    assert.equal(edgeKeyNames.callerCounter(slug, '198.51.100.7', 29_000_000), 'edge:rl:{support-bot-3f9a}:caller:198.51.100.7:29000000');
    assert.equal(edgeKeyNames.agentCounter(slug, 29_000_000), 'edge:rl:{support-bot-3f9a}:agent:29000000');
    assert.equal(edgeKeyNames.usage(slug, '2031-03'), 'edge:usage:{support-bot-3f9a}:2031-03');
    assert.equal(edgeKeyNames.index, 'edge:slugs');
  });

  it('names the wake: a per-agent key in its slot, one queue, one channel with the key prefix put before it by hand', () => {
    assert.equal(edgeKeyNames.wake(slug), 'edge:wake:{support-bot-3f9a}');
    assert.equal(edgeKeyNames.wakeQueue, 'edge:wake-queue');
    // ioredis's keyPrefix leaves channels alone, so both sides add REDIS_KEY_PREFIX themselves.
    assert.equal(wakeEventsChannel(''), 'edge:wake-events');
    assert.equal(wakeEventsChannel('staging:'), 'staging:edge:wake-events');
    assert.equal(WAKE_REQUESTED, 'requested');
    assert.equal(WAKE_REFUSED_PREFIX, 'refused:');
    assert.equal(WAKE_REFUSAL_TTL_SECONDS, 10);
  });

  it('writes the agent hash with the field names the Check script reads', () => {
    assert.deepEqual(edgeAgentHash({ id: 'agt_1', accountId: 'acc_1', slug, access: 'private', callerRpm: 120, agentRpm: 300, wakeable: true }), {
      id: 'agt_1',
      account: 'acc_1',
      access: 'private',
      caller_rpm: '120',
      agent_rpm: '300',
      wakeable: '1',
    });
  });

  it('parses the usage keys it names, and nothing else', () => {
    const flushId = '0f8e9c52-3d0c-4c4e-9b1e-6a7d2f1e0c11';
    assert.deepEqual(parseUsageKey(edgeKeyNames.usage(slug, '2031-03')), { slug, month: '2031-03' });
    assert.deepEqual(parseUsageFlushingKey(edgeKeyNames.usageFlushing(slug, '2031-03', flushId)), { slug, month: '2031-03', flushId });
    assert.equal(edgeKeyNames.usageFlushing(slug, '2031-03', flushId), `edge:usage-flushing:{support-bot-3f9a}:2031-03:${flushId}`);
    assert.equal(parseUsageKey(edgeKeyNames.usageFlushing(slug, '2031-03', flushId)), undefined);
    assert.equal(parseUsageKey('edge:usage:{a}:2031-3'), undefined);
    assert.equal(parseUsageFlushingKey(edgeKeyNames.usage(slug, '2031-03')), undefined);
  });

  it("names each second of an agent's request figures by agent id and epoch second, and parses only those names", () => {
    assert.equal(edgeKeyNames.requestFigures('agt_7Hq2', 1_932_000_000), 'edge:requests:{agt_7Hq2}:1932000000');
    assert.deepEqual(parseRequestFiguresKey('edge:requests:{agt_7Hq2}:1932000000'), { agentId: 'agt_7Hq2', epochSecond: 1_932_000_000 });
    assert.equal(parseRequestFiguresKey(edgeKeyNames.usage(slug, '2031-03')), undefined);
    assert.equal(parseRequestFiguresKey('edge:requests:{agt_7Hq2}:soon'), undefined);
  });

  it('holds a second of request figures in these fields and latency buckets, for a minute and a bit', () => {
    assert.deepEqual(
      [REQUEST_FIGURE_FIELDS.count, REQUEST_FIGURE_FIELDS.errors, REQUEST_FIGURE_FIELDS.latencySumUs, REQUEST_FIGURE_FIELDS.bucket(0), REQUEST_FIGURE_FIELDS.bucket(17)],
      ['count', 'errors', 'latency_us', 'le_0', 'le_17'],
    );
    // Edge and control must agree on every bound: a changed list would misplace old seconds' buckets.
    assert.deepEqual(LATENCY_BOUNDS_MS, [1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 30_000, 60_000, 120_000, 300_000]);
    assert.equal(FIGURES_WINDOW_SECONDS, 60);
    assert.equal(REQUEST_FIGURES_TTL_SECONDS, 75);
  });

  it('counts in one-minute windows and UTC months', () => {
    const moment = new Date('2031-03-31T23:59:45.250Z');
    assert.equal(windowOf(moment), Math.floor(moment.getTime() / 60_000));
    assert.equal(secondsToWindowEnd(moment), 15);
    assert.equal(secondsToWindowEnd(new Date('2031-03-31T23:59:00.000Z')), 60);
    assert.equal(usageMonthOf(moment), '2031-03');
    assert.equal(usageMonthOf(new Date('2031-04-01T00:00:00.000Z')), '2031-04');
  });
});
