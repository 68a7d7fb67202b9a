import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import { ManualClock } from './support/manual-clock.js';
import { startLocalEdge, type RunningLocalEdge } from '../envoy/local-edge/server.js';
import { connectTestRedis, EdgeProjectionWriter, newAccessKey, startTestAuthz, uniqueAgentDomain, type TestAuthz } from './support/edge-authz.js';
import { describeOnEachAuthzServer } from './support/authz-servers.js';
import { edgeRequest, startUpstream, type TestUpstream, LOOPBACK_UPSTREAMS } from './support/edge-upstream.js';

/**
 * The local edge's CORS for the web console, in front of a real authz on real Redis: what a
 * browser on the console's origin sees, and that only a true preflight skips the key check.
 */
describeOnEachAuthzServer('local edge CORS for the console', (server) => {
  const consoleOrigin = 'http://127.0.0.1:7070';
  const domain = uniqueAgentDomain('edge-cors');
  const clock = new ManualClock(new Date('2031-05-06T07:08:20.000Z'));
  let redis: Redis;
  let projection: EdgeProjectionWriter;
  let authz: TestAuthz;
  let edge: RunningLocalEdge;
  let replica: TestUpstream;
  let privateHost: string;
  const key = newAccessKey();
  const call = (options: Omit<Parameters<typeof edgeRequest>[0], 'port' | 'host'> & { host?: string }) => edgeRequest({ port: edge.port, host: privateHost, ...options });
  const preflight = { 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type' };

  before(async () => {
    redis = connectTestRedis();
    projection = new EdgeProjectionWriter(redis);
    authz = await startTestAuthz({ redis, clock, agentDomain: domain, server });
    edge = await startLocalEdge({ upstreamSubnets: LOOPBACK_UPSTREAMS, port: 0, authzAddress: authz.authz.grpcAddress, consoleOrigin });
    // A replica that sets its own CORS header: the edge's must win, as Envoy's encoder overwrites it.
    replica = await startUpstream('cors', (_request, response) => {
      response.writeHead(200, { 'content-type': 'text/plain', 'access-control-allow-origin': '*' }).end('echo\n');
    });
    privateHost = `secret.${domain}:7080`;
    await projection.putAgent({ slug: 'secret', access: 'private', keys: [key], upstreams: [replica.address] });
  });

  after(async () => {
    await edge?.close();
    await authz?.close();
    await replica?.close();
    await projection?.cleanUp();
    redis?.disconnect();
  });

  it("answers the console's preflight itself, without a key, and the agent never sees it", async () => {
    const seen = replica.received.length;
    const answer = await call({ method: 'OPTIONS', path: '/invoke', headers: { origin: consoleOrigin, ...preflight } });
    assert.equal(answer.status, 200);
    assert.equal(answer.headers['access-control-allow-origin'], consoleOrigin);
    assert.equal(answer.headers['access-control-allow-methods'], 'GET, POST');
    assert.equal(answer.headers['access-control-allow-headers'], 'authorization, content-type');
    assert.equal(answer.headers['access-control-max-age'], '600');
    assert.equal(answer.headers['access-control-allow-credentials'], undefined);
    assert.equal(answer.body, '');
    assert.equal(replica.received.length, seen);
  });

  it('lets the real request through only with a key: a wrong key is the 401, readable by the console', async () => {
    const denied = await call({ method: 'POST', path: '/invoke', headers: { origin: consoleOrigin, authorization: `Bearer ${newAccessKey()}` } });
    assert.equal(denied.status, 401);
    assert.equal(denied.body, 'missing or invalid access key\n');
    assert.equal(denied.headers['access-control-allow-origin'], consoleOrigin);
    assert.equal(denied.headers['access-control-expose-headers'], 'retry-after, www-authenticate, x-request-id');

    const allowed = await call({ method: 'POST', path: '/invoke', headers: { origin: consoleOrigin, authorization: `Bearer ${key}` } });
    assert.equal(allowed.status, 200);
    assert.equal(allowed.body, 'echo\n');
    assert.equal(allowed.headers['access-control-allow-origin'], consoleOrigin, "the edge's value, not the replica's *");
  });

  it('an OPTIONS that is not a preflight is an ordinary request: authz still wants the key', async () => {
    const seen = replica.received.length;
    const plain = await call({ method: 'OPTIONS', path: '/invoke', headers: { origin: consoleOrigin } });
    assert.equal(plain.status, 401);
    assert.equal(plain.headers['access-control-allow-origin'], consoleOrigin);
    assert.equal(replica.received.length, seen);
  });

  it("gives another origin nothing: its preflight goes to authz like any request, and no response names it", async () => {
    const stranger = 'https://evil.example';
    const answer = await call({ method: 'OPTIONS', path: '/invoke', headers: { origin: stranger, ...preflight } });
    assert.equal(answer.status, 401);
    assert.equal(answer.headers['access-control-allow-origin'], undefined);
    const withKey = await call({ method: 'POST', path: '/invoke', headers: { origin: stranger, authorization: `Bearer ${key}` } });
    assert.equal(withKey.status, 200);
    assert.equal(withKey.headers['access-control-allow-origin'], '*', "the replica's own header passes untouched");
  });

  it('answers without CORS headers when no console origin is set', async () => {
    const bare = await startLocalEdge({ upstreamSubnets: LOOPBACK_UPSTREAMS, port: 0, authzAddress: authz.authz.grpcAddress });
    try {
      const answer = await edgeRequest({ port: bare.port, host: privateHost, method: 'OPTIONS', path: '/invoke', headers: { origin: consoleOrigin, ...preflight } });
      assert.equal(answer.status, 401);
      assert.equal(answer.headers['access-control-allow-origin'], undefined);
    } finally {
      await bare.close();
    }
  });
});
