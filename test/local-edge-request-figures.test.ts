import assert from 'node:assert/strict';
import { Agent, request as httpRequest } from 'node:http';
import { startControl, type TestControl } from './support/control-harness.js';
import { runReplica } from './support/in-memory-driver.js';
import { edgeRequest, LOOPBACK_UPSTREAMS, startUpstream, type TestUpstream } from './support/edge-upstream.js';
import { startLocalEdgeStack, type LocalEdgeStack } from './support/local-edge-stack.js';
import { describeOnEachAuthzServer } from './support/authz-servers.js';
import { waitFor } from './support/wait.js';
import type { Redis } from 'ioredis';
import { startLocalEdge, type RunningLocalEdge } from '../envoy/local-edge/server.js';
import { createRequestFigureRecorder, type RequestFigureRecorder } from '../contract/request-figure-recorder.js';
import { RequestFiguresReader } from '../control/edge/request-figures.js';
import { systemClock } from '../contract/clock.js';
import { allowedResponse, answerWith, startRawAuthzServer, type RawAuthzServer } from './support/raw-authz-server.js';
import { connectTestRedis } from './support/edge-authz.js';

/**
 * Issue 18's done-when on the local edge: requests through the edge (authz over gRPC, a
 * real HTTP replica) show up in GET /agents/{id}/metrics within 5 s, the agent's 5xx as
 * errors, and requests the edge denied not at all.
 */
describeOnEachAuthzServer('request figures through the local edge', function (authzServer) {
  this.timeout(60_000);
  let control: TestControl;
  let edge: LocalEdgeStack;
  let replica: TestUpstream;
  const keepAlive = new Agent({ keepAlive: true, maxSockets: 8 });

  before(async () => {
    control = await startControl();
    edge = await startLocalEdgeStack(control, { authzServer });
    replica = await startUpstream('figures', (request, response) => {
      request.resume();
      request.on('end', () => response.writeHead(request.url === '/fail' ? 500 : 200, { 'content-type': 'text/plain' }).end('answered\n'));
    });
  });
  after(async () => {
    keepAlive.destroy();
    await replica?.close();
    await edge?.close();
    await control?.close();
  });

  function call(host: string, path: string, key?: string): Promise<number> {
    return new Promise((resolve, reject) => {
      const headers: Record<string, string> = { host, ...(key ? { authorization: `Bearer ${key}` } : {}) };
      const req = httpRequest({ host: '127.0.0.1', port: edge.port, path, method: 'POST', headers, agent: keepAlive }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      });
      req.on('error', reject);
      req.end('{"input":"hi"}');
    });
  }

  it('after 50 requests, the metrics sample shows request_count ≥ 50 and avg_latency_ms > 0 within 5 s', async () => {
    const { token } = await control.signUp();
    const created = await control.request('POST', '/agents', { token, body: { name: 'measured', api_key: 'sk-test', access: 'private', deploy: { replicas: 1 } } });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const key = created.body.access_key as string;
    assert.ok(key, 'a private agent comes with an access key');
    const host = new URL(created.body.url).hostname;
    await runReplica(control, { id: created.body.id, slug: host.split('.')[0]! }, replica.address);

    const statuses: number[] = [];
    for (let i = 0; i < 50; i += 1) statuses.push(await call(host, i % 10 === 9 ? '/fail' : '/invoke', key));
    assert.deepEqual([statuses.filter((s) => s === 200).length, statuses.filter((s) => s === 500).length], [45, 5]);
    // Denied by authz (no key): never reach the replica, never counted.
    for (let i = 0; i < 5; i += 1) assert.equal(await call(host, '/invoke'), 401);

    const sample = await waitFor(
      'request_count ≥ 50',
      async () => {
        const response = await control.request('GET', `/agents/${created.body.id}/metrics`, { token });
        assert.equal(response.status, 200, JSON.stringify(response.body));
        return response.body.request_count >= 50 ? response.body : undefined;
      },
      5_000, // the deadline
    );
    assert.equal(sample.request_count, 50, 'the 401s are not counted');
    assert.equal(sample.error_count, 5, "the replica's 500s");
    assert.ok(sample.avg_latency_ms > 0, `avg_latency_ms ${sample.avg_latency_ms}`);
    assert.ok(sample.p95_latency_ms > 0, `p95_latency_ms ${sample.p95_latency_ms}`);
    assert.equal(replica.received.length, 50, 'exactly the counted requests reached the replica');
    const versions = await new RequestFiguresReader(control.redis, systemClock).byVersion(created.body.id);
    assert.equal(versions.canary.requestCount, 0, "an agent without a canary: authz's answers name no canary");
    assert.equal(versions.stable.requestCount, 50);
  });
});

/**
 * Issue 36: the local edge counts a request as the canary's when authz's answer says so
 * (`version: canary` in the Check's dynamic metadata), as Envoy's access log does. A raw
 * authz answers by hand, so each version can be named whatever the real authz's routing
 * does; the recorder writes to the run's real Redis and the control API's reader reads it.
 */
describe('request figures through the local edge: the version authz answered', function () {
  this.timeout(30_000);
  let authz: RawAuthzServer;
  let replica: TestUpstream;
  let redis: Redis;
  let recorder: RequestFigureRecorder;
  let edge: RunningLocalEdge;

  before(async () => {
    authz = await startRawAuthzServer();
    replica = await startUpstream('versioned', (request, response) => {
      request.resume();
      request.on('end', () => response.writeHead(request.url === '/fail' ? 500 : 200, { 'content-type': 'text/plain' }).end('answered\n'));
    });
    redis = connectTestRedis();
    recorder = createRequestFigureRecorder({ redis, flushIntervalMs: 100, onError: (error) => assert.fail(error) });
    edge = await startLocalEdge({ upstreamSubnets: LOOPBACK_UPSTREAMS, port: 0, authzAddress: authz.address, requestFigures: recorder });
  });
  after(async () => {
    await edge?.close();
    await recorder?.close();
    await replica?.close();
    await authz?.close();
    redis?.disconnect();
  });

  /** One request through the edge, authz answering that `version` (none: an authz before canaries) allowed it. */
  async function callAs(agentId: string, version: string | undefined, path = '/invoke'): Promise<number> {
    authz.answer = (stream) => answerWith(stream, allowedResponse(replica.address, agentId, version));
    return (await edgeRequest({ port: edge.port, host: 'agent.example.test:7080', path })).status;
  }

  it("counts the canary's requests in the totals and as the canary's; stable, no or an unknown version as stable", async () => {
    const agentId = `agt_versioned${Date.now()}`;
    const statuses = [
      await callAs(agentId, 'canary'),
      await callAs(agentId, 'canary', '/fail'),
      await callAs(agentId, 'stable'),
      await callAs(agentId, undefined),
      await callAs(agentId, 'Canary', '/fail'),
    ];
    assert.deepEqual(statuses, [200, 500, 200, 200, 500]);

    const reader = new RequestFiguresReader(redis, systemClock);
    const figures = await waitFor('all five flushed', async () => {
      const read = await reader.byVersion(agentId);
      return read.stable.requestCount + read.canary.requestCount === 5 ? read : undefined;
    }, 5_000);
    assert.deepEqual([figures.canary.requestCount, figures.canary.errorCount], [2, 1], "the canary's two, one a 500");
    assert.deepEqual([figures.stable.requestCount, figures.stable.errorCount], [3, 1], 'stable, unversioned and unknown');
    assert.ok(figures.canary.avgLatencyMs > 0, `canary avg_latency_ms ${figures.canary.avgLatencyMs}`);
    const totals = await reader.lastMinute(agentId);
    assert.deepEqual([totals.requestCount, totals.errorCount], [5, 2], 'the totals count every version');
  });
});
