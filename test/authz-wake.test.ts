import assert from 'node:assert/strict';
import { status as GrpcStatus } from '@grpc/grpc-js';
import type { Redis } from 'ioredis';
import { ManualClock } from './support/manual-clock.js';
import { edgeKeyNames, usageMonthOf } from '../contract/edge-keys.js';
import { EdgeProjection } from '../control/edge/projection.js';
import {
  connectTestRedis, denialOf, EdgeProjectionWriter, newAccessKey, startTestAuthz, uniqueAgentDomain,
  type DecodedCheckResponse, type TestAuthz,
} from './support/edge-authz.js';
import { describeOnEachAuthzServer } from './support/authz-servers.js';
import { waitFor } from './support/wait.js';

/**
 * A parked agent's wake as authz does it (docs/contract.md, "Wake"), on the run's real
 * Redis: the control API's part is played by its real EdgeProjection (the upstream write
 * that publishes `routable`, the refusal) and by reading the wake queue.
 */
describeOnEachAuthzServer('authz: Checks for a parked agent wait for its wake', function (server) {
  this.timeout(30_000);
  const domain = uniqueAgentDomain('authz-wake');
  const clock = new ManualClock(new Date('2031-03-04T05:06:30.000Z'));
  let redis: Redis;
  let writer: EdgeProjectionWriter;
  let control: EdgeProjection;
  let edge: TestAuthz;
  let nextSlug = 0;
  const slug = (label: string) => `${label}-${++nextSlug}`;
  const hostOf = (agentSlug: string) => `${agentSlug}.${domain}`;
  const bearer = (key: string) => ({ authorization: `Bearer ${key}` });
  const queued = () => redis.lrange(edgeKeyNames.wakeQueue, 0, -1);

  before(async () => {
    redis = connectTestRedis();
    writer = new EdgeProjectionWriter(redis);
    control = new EdgeProjection(redis, redis.options.keyPrefix);
    edge = await startTestAuthz({ redis, clock, agentDomain: domain, wakeTimeoutSeconds: 2, server });
  });
  beforeEach(async () => redis.del(edgeKeyNames.wakeQueue));
  after(async () => {
    await writer.cleanUp();
    await redis.del(edgeKeyNames.wakeQueue);
    await edge.close();
    redis.disconnect();
  });

  const upstreamOf = (response: DecodedCheckResponse) => {
    assert.equal(response.status.code, GrpcStatus.OK, JSON.stringify(response));
    return response.dynamic_metadata!.fields.upstream!.stringValue;
  };

  it('holds ten concurrent Checks on one wake request and lets all of them through once a replica is routable, counting each once', async () => {
    const agentSlug = slug('parked');
    const key = newAccessKey();
    const agentId = await writer.putAgent({ slug: agentSlug, access: 'private', keys: [key], wakeable: true });
    const checks = Array.from({ length: 10 }, () => edge.client.check({ host: hostOf(agentSlug), headers: bearer(key) }));
    await waitFor('the wake queued', async () => ((await queued()).length > 0 ? true : undefined), 5_000);
    await waitFor('every Check held', async () => (edge.authz.heldForWake === 10 ? true : undefined), 5_000);
    assert.deepEqual(await queued(), [agentId], 'one wake for ten requests');
    assert.equal(await redis.get(edgeKeyNames.usage(agentSlug, usageMonthOf(clock.now()))), null, 'nothing counted while held');

    // The control API's upstream write once the replica is up: it publishes `routable`.
    await control.setUpstreams(agentSlug, ['10.9.0.1:8080']);
    const answers = await Promise.all(checks);
    for (const answer of answers) assert.equal(upstreamOf(answer), '10.9.0.1:8080');
    assert.equal(await redis.get(edgeKeyNames.usage(agentSlug, usageMonthOf(clock.now()))), '10', 'each request counted once');
    assert.equal(await redis.exists(edgeKeyNames.wake(agentSlug)), 0, 'the wake is over: the next parking needs a new one');
    assert.equal(edge.authz.heldForWake, 0);
  });

  it('wakes nothing for a request without a valid key: 401 at once, no wake key, nothing queued', async () => {
    const agentSlug = slug('private');
    await writer.putAgent({ slug: agentSlug, access: 'private', keys: [newAccessKey()], wakeable: true });
    for (const headers of [{}, bearer(newAccessKey())]) {
      const denial = denialOf(await edge.client.check({ host: hostOf(agentSlug), headers }));
      assert.equal(denial.httpStatus, 'Unauthorized');
    }
    assert.equal(await redis.exists(edgeKeyNames.wake(agentSlug)), 0);
    assert.deepEqual(await queued(), []);
  });

  it('answers a refused wake with the body naming the quota, to the held Checks and to those that come after', async () => {
    const agentSlug = slug('refused');
    await writer.putAgent({ slug: agentSlug, access: 'public', wakeable: true });
    const held = edge.client.check({ host: hostOf(agentSlug) });
    await waitFor('the wake queued', async () => ((await queued()).length > 0 ? true : undefined), 5_000);
    const body = "service unavailable: the agent is parked and cannot start: the account's plan quota max_replicas is 3, starting it needs 4\n";
    await control.refuseWake(agentSlug, body);
    for (const answer of [await held, await edge.client.check({ host: hostOf(agentSlug) })]) {
      const denial = denialOf(answer);
      assert.equal(denial.httpStatus, 'ServiceUnavailable');
      assert.equal(denial.body, body);
    }
    assert.equal((await queued()).length, 1, 'a refusal stands for a while: no new wake per request');
  });

  it('answers 503 with Retry-After once WAKE_TIMEOUT_SECONDS pass without a routable replica', async () => {
    const agentSlug = slug('slow');
    await writer.putAgent({ slug: agentSlug, access: 'public', wakeable: true });
    const denial = denialOf(await edge.client.check({ host: hostOf(agentSlug) }));
    assert.equal(denial.httpStatus, 'ServiceUnavailable');
    assert.equal(denial.body, 'service unavailable: the agent is starting, retry shortly\n');
    assert.equal(denial.headers['retry-after'], '5');
    assert.equal(denial.headers['content-type'], 'text/plain');
  });

  it('answers the Checks it holds when it stops, instead of keeping its shutdown waiting out the wake timeout', async function () {
    this.timeout(10_000); // far below the 30 s wake timeout of this authz
    const patient = await startTestAuthz({ redis, clock, agentDomain: domain, wakeTimeoutSeconds: 30, server });
    const agentSlug = slug('stopping');
    await writer.putAgent({ slug: agentSlug, access: 'public', wakeable: true });
    const held = patient.client.check({ host: hostOf(agentSlug) });
    await waitFor('held', async () => (patient.authz.heldForWake === 1 ? true : undefined), 5_000);
    const closing = patient.authz.close();
    const denial = denialOf(await held);
    assert.equal(denial.httpStatus, 'ServiceUnavailable');
    assert.equal(denial.headers['retry-after'], '5');
    await closing;
    patient.client.close();
  });

  it('answers an agent that does not scale to zero and has no replica at once, waking nothing', async () => {
    const agentSlug = slug('stopped');
    await writer.putAgent({ slug: agentSlug, access: 'public', wakeable: false });
    const denial = denialOf(await edge.client.check({ host: hostOf(agentSlug) }));
    assert.equal(denial.body, 'no running replica\n');
    assert.deepEqual(await queued(), []);
  });
});
