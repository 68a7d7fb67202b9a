import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import { systemClock } from '../contract/clock.js';
import { freePort } from '../scripts/lib/local-services.js';
import { parseSamples, sampleValue } from './support/prometheus-text.js';
import { connectTestRedis, startTestAuthz, uniqueAgentDomain, type TestAuthz } from './support/edge-authz.js';
import { describeOnEachAuthzServer } from './support/authz-servers.js';

/**
 * authz's HTTP probes on its metrics port, beside the gRPC health service: readiness is
 * "Redis answers" (the gRPC health service's answer too), liveness never asks Redis.
 */

async function getJson(url: string): Promise<{ status: number; body: any }> {
  const response = await fetch(url);
  assert.match(response.headers.get('content-type') ?? '', /^application\/json/);
  return { status: response.status, body: await response.json() };
}

describeOnEachAuthzServer('authz probes: /livez, /readyz, /healthz and /metrics on the metrics port', function (server) {
  const domain = uniqueAgentDomain('authz-probes');

  describe('with Redis answering', function () {
    let redis: Redis;
    let running: TestAuthz;
    let root: string;
    before(async () => {
      redis = connectTestRedis();
      running = await startTestAuthz({ redis, clock: systemClock, agentDomain: domain, server });
      root = `http://127.0.0.1:${running.authz.metricsPort}`;
    });
    after(async () => {
      await running?.close();
      redis?.disconnect();
    });

    it('is live and ready, /healthz answering as /readyz, and agrees with the gRPC health service', async () => {
      assert.deepEqual(await getJson(`${root}/livez`), { status: 200, body: { status: 'ok' } });
      const ready = { status: 200, body: { status: 'ok', dependencies: { redis: 'ok' } } };
      assert.deepEqual(await getJson(`${root}/readyz`), ready);
      assert.deepEqual(await getJson(`${root}/healthz`), ready);
      assert.deepEqual(await running.client.healthCheck(), { status: 'SERVING' });
    });

    it("serves authz's families and the default process metrics (CPU, heap, event-loop lag) on /metrics", async () => {
      const response = await fetch(`${root}/metrics`);
      assert.equal(response.status, 200);
      const samples = parseSamples(await response.text());
      assert.equal(sampleValue(samples, 'agent_platform_authz_checks_total', { decision: 'allowed', reason: 'allowed' }), 0);
      assert.equal(sampleValue(samples, 'agent_platform_authz_ready'), 1, '/readyz answered at scrape time');
      assert.equal(sampleValue(samples, 'agent_platform_authz_worker_checks_total', { worker: '0' }), 0, 'a single process is worker 0');
      assert.ok(sampleValue(samples, 'process_cpu_user_seconds_total')! > 0);
      assert.ok(sampleValue(samples, 'nodejs_heap_size_used_bytes')! > 0);
      assert.ok(sampleValue(samples, 'nodejs_eventloop_lag_seconds')! >= 0);
    });

    it('still serves /metrics, answers 404 elsewhere and 405 to other methods', async () => {
      assert.equal((await fetch(`${root}/metrics`)).status, 200);
      assert.equal((await fetch(`${root}/nothing`)).status, 404);
      assert.equal((await fetch(`${root}/readyz`, { method: 'POST' })).status, 405);
    });
  });

  describe('with Redis unreachable', function () {
    let deadRedis: Redis;
    let running: TestAuthz;
    let root: string;
    before(async () => {
      deadRedis = new Redis(await freePort(), '127.0.0.1', { maxRetriesPerRequest: 1, retryStrategy: () => 200, lazyConnect: true });
      deadRedis.on('error', () => undefined);
      running = await startTestAuthz({ redis: deadRedis, clock: systemClock, agentDomain: domain, server });
      root = `http://127.0.0.1:${running.authz.metricsPort}`;
    });
    after(async () => {
      await running?.close();
      deadRedis?.disconnect();
    });

    it('is not ready (503 naming Redis) on /readyz and /healthz, NOT_SERVING in gRPC, yet live', async () => {
      for (const path of ['/readyz', '/healthz']) {
        const readiness = await getJson(`${root}${path}`);
        assert.equal(readiness.status, 503, path);
        assert.deepEqual(readiness.body.dependencies, { redis: 'unavailable' }, path);
        assert.match(readiness.body.message, /redis/, path);
      }
      assert.deepEqual(await running.client.healthCheck(), { status: 'NOT_SERVING' });
      assert.deepEqual(await getJson(`${root}/livez`), { status: 200, body: { status: 'ok' } });
    });

    it('says so in /metrics too: agent_platform_authz_ready 0, the rest still served', async () => {
      const response = await fetch(`${root}/metrics`);
      assert.equal(response.status, 200);
      const samples = parseSamples(await response.text());
      assert.equal(sampleValue(samples, 'agent_platform_authz_ready'), 0);
      assert.ok(sampleValue(samples, 'process_cpu_user_seconds_total')! > 0);
    });
  });
});
