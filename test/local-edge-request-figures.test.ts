import assert from 'node:assert/strict';
import { Agent, request as httpRequest } from 'node:http';
import { startControl, type TestControl } from './support/control-harness.js';
import { runReplica } from './support/in-memory-driver.js';
import { startUpstream, type TestUpstream } from './support/edge-upstream.js';
import { startLocalEdgeStack, type LocalEdgeStack } from './support/local-edge-stack.js';
import { describeOnEachAuthzServer } from './support/authz-servers.js';
import { waitFor } from './support/wait.js';

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
  });
});
