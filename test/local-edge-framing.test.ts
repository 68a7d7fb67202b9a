import assert from 'node:assert/strict';
import { once } from 'node:events';
import { Redis } from 'ioredis';
import { ManualClock } from './support/manual-clock.js';
import { startLocalEdge, type RunningLocalEdge } from '../envoy/local-edge/server.js';
import { connectTestRedis, EdgeProjectionWriter, startTestAuthz, uniqueAgentDomain, type TestAuthz } from './support/edge-authz.js';
import { describeOnEachAuthzServer } from './support/authz-servers.js';
import { startUpstream, type TestUpstream, LOOPBACK_UPSTREAMS } from './support/edge-upstream.js';
import { openRawClient, rawExchange } from './support/slow-client.js';

/**
 * Issue 13 item 8, with raw TCP requests against the local edge: framings two readers
 * could disagree about are a 400 that reaches neither authz's decision nor the agent,
 * and an agent's early answer to an upload is relayed.
 */
describeOnEachAuthzServer('local edge: request framing', (server) => {
  const domain = uniqueAgentDomain('edge-framing');
  let redis: Redis;
  let projection: EdgeProjectionWriter;
  let authz: TestAuthz;
  let edge: RunningLocalEdge;
  let replica: TestUpstream;
  let early: TestUpstream;
  const host = `open.${domain}:7080`;
  const earlyHost = `early.${domain}:7080`;

  before(async () => {
    redis = connectTestRedis();
    projection = new EdgeProjectionWriter(redis);
    authz = await startTestAuthz({ redis, clock: new ManualClock(new Date()), agentDomain: domain, server });
    edge = await startLocalEdge({ upstreamSubnets: LOOPBACK_UPSTREAMS, port: 0, authzAddress: authz.authz.grpcAddress });
    replica = await startUpstream('open');
    // Refuses every upload at once, without reading it, as an agent with a size limit would.
    early = await startUpstream('early', (_request, response) => {
      response.writeHead(413, { 'content-type': 'text/plain', connection: 'close' }).end('upload too large\n');
    });
    await projection.putAgent({ slug: 'open', access: 'public', upstreams: [replica.address] });
    await projection.putAgent({ slug: 'early', access: 'public', upstreams: [early.address] });
  });

  after(async () => {
    await edge.close();
    await authz.close();
    await replica.close();
    await early.close();
    await projection.cleanUp();
    redis.disconnect();
  });

  const statusOf = (answer: string) => Number(/^HTTP\/1\.1 (\d{3}) /.exec(answer)?.[1]);

  it('answers an ordinary raw request with the agent\'s 200 (the baseline the cases below differ from)', async () => {
    const answer = await rawExchange(edge.port, `GET /ok HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`);
    assert.equal(statusOf(answer), 200, answer);
  });

  it('answers 400, and forwards nothing, for two Host headers, even when both name the agent', async () => {
    const seen = replica.received.length;
    for (const second of [host, `other.${domain}:7080`]) {
      const answer = await rawExchange(edge.port, `GET / HTTP/1.1\r\nHost: ${host}\r\nHost: ${second}\r\nConnection: close\r\n\r\n`);
      assert.equal(statusOf(answer), 400, answer);
      assert.match(answer, /more than one Host header/);
    }
    assert.equal(replica.received.length, seen);
  });

  it('answers 400 for a second Authorization header', async () => {
    const seen = replica.received.length;
    const answer = await rawExchange(
      edge.port,
      `GET / HTTP/1.1\r\nHost: ${host}\r\nAuthorization: Bearer one\r\nauthorization: Bearer two\r\nConnection: close\r\n\r\n`,
    );
    assert.equal(statusOf(answer), 400, answer);
    assert.match(answer, /more than one Authorization header/);
    assert.equal(replica.received.length, seen);
  });

  it('answers 400 for an absolute-form request line whose authority disagrees with Host, and forwards one that agrees in origin-form', async () => {
    const seen = replica.received.length;
    const mismatch = await rawExchange(edge.port, `GET http://other.${domain}:7080/x HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`);
    assert.equal(statusOf(mismatch), 400, mismatch);
    assert.match(mismatch, /does not match Host/);
    assert.equal(replica.received.length, seen);

    const agreeing = await rawExchange(edge.port, `GET http://${host}/x?y=1 HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`);
    assert.equal(statusOf(agreeing), 200, agreeing);
    assert.equal(replica.received.at(-1)?.url, '/x?y=1');
  });

  it('relays an agent\'s early answer to an upload that has not finished, instead of a 502', async () => {
    const client = await openRawClient(edge.port);
    client.socket.write(`POST /upload HTTP/1.1\r\nHost: ${earlyHost}\r\nContent-Type: application/octet-stream\r\nContent-Length: 10000000\r\n\r\n`);
    client.socket.write(Buffer.alloc(256 * 1024, 1));
    // Keep uploading until the answer arrives; the rest of the body is never sent.
    // Until a head and a first line of body have arrived (chunked or not).
    while (!/\r\n\r\n.*\n\r\n/s.test(client.received()) && !client.socket.destroyed) {
      if (!client.socket.write(Buffer.alloc(16 * 1024, 1))) await Promise.race([once(client.socket, 'drain'), client.closed]);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    client.socket.destroy();
    assert.equal(statusOf(client.received()), 413, client.received());
    assert.ok(client.received().includes('upload too large\n'), client.received());
  });
});
