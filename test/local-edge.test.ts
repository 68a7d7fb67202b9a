import assert from 'node:assert/strict';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { Redis } from 'ioredis';
import { ManualClock } from './support/manual-clock.js';
import { startLocalEdge, type RunningLocalEdge } from '../envoy/local-edge/server.js';
import { freePort } from '../scripts/lib/local-services.js';
import { connectTestRedis, EdgeProjectionWriter, newAccessKey, startTestAuthz, uniqueAgentDomain, type TestAuthz } from './support/edge-authz.js';
import { describeOnEachAuthzServer } from './support/authz-servers.js';
import { edgeRequest, startUpstream, type TestUpstream, LOOPBACK_UPSTREAMS } from './support/edge-upstream.js';

/**
 * The local edge in front of a real authz on real Redis, forwarding to tiny replicas on
 * 127.0.0.1. Callers come from 127.0.0.2 and 127.0.0.3 (http.request's localAddress).
 */
describeOnEachAuthzServer('local edge', (server) => {
  const domain = uniqueAgentDomain('local-edge');
  const clock = new ManualClock(new Date('2031-05-06T07:08:20.000Z'));
  let redis: Redis;
  let projection: EdgeProjectionWriter;
  let authz: TestAuthz;
  let edge: RunningLocalEdge;
  let replicaA: TestUpstream;
  let replicaB: TestUpstream;
  let nextSlug = 0;
  const slug = (label: string) => `${label}-${++nextSlug}`;
  const hostOf = (agentSlug: string) => `${agentSlug}.${domain}:7080`;
  const call = (options: Omit<Parameters<typeof edgeRequest>[0], 'port'>) => edgeRequest({ port: edge.port, ...options });

  before(async () => {
    redis = connectTestRedis();
    projection = new EdgeProjectionWriter(redis);
    authz = await startTestAuthz({ redis, clock, agentDomain: domain, server });
    edge = await startLocalEdge({ upstreamSubnets: LOOPBACK_UPSTREAMS, port: 0, authzAddress: authz.authz.grpcAddress });
    replicaA = await startUpstream('a');
    replicaB = await startUpstream('b');
  });

  after(async () => {
    await edge.close();
    await authz.close();
    await replicaA.close();
    await replicaB.close();
    await projection.cleanUp();
    redis.disconnect();
  });

  describe('denials', () => {
    it('passes authz denials through exactly: status, headers and plain-text body', async () => {
      const privateSlug = slug('private');
      const publicSlug = slug('limited');
      const emptySlug = slug('empty');
      await projection.putAgent({ slug: privateSlug, access: 'private', keys: [newAccessKey()], upstreams: [replicaA.address] });
      await projection.putAgent({ slug: publicSlug, access: 'public', callerRpm: 1, upstreams: [replicaA.address] });
      await projection.putAgent({ slug: emptySlug, access: 'public' });
      const seenBefore = replicaA.received.length;

      const notFound = await call({ host: `nobody.${domain}:7080` });
      assert.equal(notFound.status, 404);
      assert.equal(notFound.headers['content-type'], 'text/plain');
      assert.equal(notFound.body, 'no agent at this address\n');

      const unauthorised = await call({ host: hostOf(privateSlug), headers: { authorization: `Bearer ${newAccessKey()}` } });
      assert.equal(unauthorised.status, 401);
      assert.equal(unauthorised.headers['www-authenticate'], 'Bearer');
      assert.equal(unauthorised.headers['content-type'], 'text/plain');
      assert.equal(unauthorised.body, 'missing or invalid access key\n');

      assert.equal((await call({ host: hostOf(publicSlug), localAddress: '127.0.0.2' })).status, 200);
      const limited = await call({ host: hostOf(publicSlug), localAddress: '127.0.0.2' });
      assert.equal(limited.status, 429);
      assert.equal(limited.headers['retry-after'], '40');
      assert.equal(limited.body, 'rate limit exceeded\n');
      assert.equal((await call({ host: hostOf(publicSlug), localAddress: '127.0.0.3' })).status, 200, 'another address still passes');

      const noReplica = await call({ host: hostOf(emptySlug) });
      assert.equal(noReplica.status, 503);
      assert.equal(noReplica.body, 'no running replica\n');

      assert.equal(replicaA.received.length, seenBefore + 2, 'only the two allowed requests reached the replica');
    });
  });

  describe('forwarding', () => {
    it('forwards method, path, query, Host and body, adds the proxy headers, and returns the response as sent', async () => {
      const agentSlug = slug('echo');
      const id = await projection.putAgent({ slug: agentSlug, access: 'public', upstreams: [replicaA.address] });
      const response = await call({
        host: hostOf(agentSlug),
        method: 'POST',
        path: '/invoke?stream=false',
        localAddress: '127.0.0.2',
        headers: { 'content-type': 'application/json', 'x-forwarded-for': '198.51.100.1' },
        body: '{"input":"hello"}',
      });
      assert.equal(response.status, 200);
      assert.equal(response.headers['x-upstream'], 'a');
      const echoed = JSON.parse(response.body);
      assert.equal(echoed.method, 'POST');
      assert.equal(echoed.url, '/invoke?stream=false');
      assert.equal(echoed.body, '{"input":"hello"}');
      assert.equal(echoed.headers.host, hostOf(agentSlug));
      assert.equal(echoed.headers['x-agent-id'], id);
      assert.equal(echoed.headers['x-forwarded-for'], '198.51.100.1, 127.0.0.2');
      assert.equal(echoed.headers['x-forwarded-proto'], 'http');
      assert.match(echoed.headers['x-request-id'], /^[0-9a-f-]{36}$/);
    });

    it('never lets the agent see authorization, and x-agent-id cannot be spoofed', async () => {
      const agentSlug = slug('private-echo');
      const key = newAccessKey();
      const id = await projection.putAgent({ slug: agentSlug, access: 'private', keys: [key], upstreams: [replicaA.address] });
      const response = await call({ host: hostOf(agentSlug), headers: { authorization: `Bearer ${key}`, 'x-agent-id': 'agt_someone_else' } });
      assert.equal(response.status, 200);
      const { headers } = JSON.parse(response.body);
      assert.equal(headers.authorization, undefined);
      assert.equal(headers['x-agent-id'], id);
    });

    it('sends the request where authz said, whatever headers the client adds', async () => {
      const victimSlug = slug('victim');
      const callerSlug = slug('caller');
      await projection.putAgent({ slug: victimSlug, access: 'private', keys: [newAccessKey()], upstreams: [replicaB.address] });
      const callerId = await projection.putAgent({ slug: callerSlug, access: 'public', upstreams: [replicaA.address] });
      const seenByB = replicaB.received.length;
      const response = await call({
        host: `${callerSlug}.${domain}:${replicaB.port}`,
        headers: {
          'x-envoy-original-dst-host': replicaB.address,
          'x-forwarded-host': `${victimSlug}.${domain}`,
          'x-envoy-external-address': '203.0.113.9',
          'x-agent-id': `agt_${victimSlug}`,
        },
      });
      assert.equal(response.status, 200);
      const echoed = JSON.parse(response.body);
      assert.equal(echoed.upstream, 'a');
      assert.equal(echoed.headers['x-agent-id'], callerId);
      assert.equal(echoed.headers['x-envoy-original-dst-host'], undefined, 'client x-envoy-* headers are dropped, as Envoy does for external requests');
      assert.equal(echoed.headers['x-envoy-external-address'], '127.0.0.1');
      assert.equal(replicaB.received.length, seenByB);
    });

    it('keeps connections to a replica alive between requests', async () => {
      const agentSlug = slug('keepalive');
      await projection.putAgent({ slug: agentSlug, access: 'public', upstreams: [replicaB.address] });
      const first = replicaB.received.length;
      await call({ host: hostOf(agentSlug) });
      await call({ host: hostOf(agentSlug) });
      const [one, two] = replicaB.received.slice(first);
      assert.equal(one!.remotePort, two!.remotePort);
    });

    it('streams server-sent events: an event reaches the caller before the replica ends the response', async () => {
      let release!: () => void;
      const released = new Promise<void>((resolve) => (release = resolve));
      const sse = await startUpstream('sse', (_request, response) => {
        response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
        response.write('data: one\n\n');
        void released.then(() => response.end('data: two\n\n'));
      });
      try {
        const agentSlug = slug('sse');
        await projection.putAgent({ slug: agentSlug, access: 'public', upstreams: [sse.address] });
        const response = await openStream({ port: edge.port, host: hostOf(agentSlug), method: 'GET', path: '/events' });
        assert.equal(response.statusCode, 200);
        assert.equal(response.headers['content-type'], 'text/event-stream');
        const firstChunk = await nextChunk(response);
        assert.equal(firstChunk, 'data: one\n\n');
        release();
        assert.equal(await readRest(response), 'data: two\n\n');
      } finally {
        release();
        await sse.close();
      }
    });

    it('streams the request body: the replica answers the first part before the caller sends the rest', async () => {
      const echo = await startUpstream('stream-echo', (request, response) => {
        response.writeHead(200, { 'content-type': 'text/plain' });
        response.flushHeaders();
        request.on('data', (chunk: Buffer) => response.write(`got ${chunk.toString()};`));
        request.on('end', () => response.end('end'));
      });
      try {
        const agentSlug = slug('upload');
        await projection.putAgent({ slug: agentSlug, access: 'public', upstreams: [echo.address] });
        const request = httpRequest({ host: '127.0.0.1', port: edge.port, method: 'POST', path: '/upload', headers: { host: hostOf(agentSlug) }, agent: false });
        const responsePromise = new Promise<IncomingMessage>((resolve, reject) => request.on('response', resolve).on('error', reject));
        request.write('first');
        const response = await responsePromise;
        assert.equal(await nextChunk(response), 'got first;');
        request.end('second');
        assert.equal(await readRest(response), 'got second;end');
      } finally {
        await echo.close();
      }
    });
  });

  describe('failures', () => {
    it('answers 502 in plain text when nothing listens on the replica port', async () => {
      const agentSlug = slug('closed');
      await projection.putAgent({ slug: agentSlug, access: 'public', upstreams: [`127.0.0.1:${await freePort()}`] });
      const response = await call({ host: hostOf(agentSlug) });
      assert.equal(response.status, 502);
      assert.equal(response.headers['content-type'], 'text/plain');
      assert.equal(response.body, 'bad gateway: the agent is not reachable\n');
    });

    it('names the request in every answer of its own, as in the agents\' (X-Request-Id)', async () => {
      const closedSlug = slug('closed-id');
      const emptySlug = slug('empty-id');
      await projection.putAgent({ slug: closedSlug, access: 'public', upstreams: [`127.0.0.1:${await freePort()}`] });
      await projection.putAgent({ slug: emptySlug, access: 'public' });
      const answered = await call({ host: hostOf(closedSlug) });
      const denied = await call({ host: hostOf(emptySlug) });
      const blind = await startLocalEdge({ upstreamSubnets: LOOPBACK_UPSTREAMS, port: 0, authzAddress: 'unix:/nonexistent/authz.sock' });
      const unchecked = await edgeRequest({ port: blind.port, host: hostOf(closedSlug) }).finally(() => blind.close());
      const agentSlug = slug('forwarded-id');
      await projection.putAgent({ slug: agentSlug, access: 'public', upstreams: [replicaA.address] });
      const forwarded = await call({ host: hostOf(agentSlug) });
      const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
      for (const [what, response, status] of [['502', answered, 502], ['503 (no replica)', denied, 503], ['503 (authz down)', unchecked, 503], ['agent', forwarded, 200]] as const) {
        assert.equal(response.status, status, what);
        assert.match(String(response.headers['x-request-id']), uuid, `${what} answer has no request id`);
      }
      // The id the caller sees is the one the agent was given.
      const seen = replicaA.received.at(-1)!;
      assert.equal(forwarded.headers['x-request-id'], seen.headers['x-request-id']);
    });

    it('never connects to an upstream outside EDGE_UPSTREAM_SUBNETS, whatever authz names: 502', async () => {
      // The edge's default: only the podman agent subnet pool; these replicas are on loopback.
      const fenced = await startLocalEdge({ port: 0, authzAddress: authz.authz.grpcAddress });
      const agentSlug = slug('off-pool');
      await projection.putAgent({ slug: agentSlug, access: 'public', upstreams: [replicaA.address] });
      const seen = replicaA.received.length;
      try {
        const response = await edgeRequest({ port: fenced.port, host: hostOf(agentSlug), method: 'POST', body: 'a caller\'s body' });
        assert.equal(response.status, 502);
        assert.equal(response.body, 'bad gateway: the agent is not reachable\n');
        assert.equal(replicaA.received.length, seen, 'the replica off the pool was reached');
        assert.equal((await call({ host: hostOf(agentSlug) })).status, 200, 'the same answer is forwarded by an edge whose subnets hold it');
      } finally {
        await fenced.close();
      }
    });

    it('answers 502 when the replica resets the connection before answering', async () => {
      const crashing = await startUpstream('crash', (request) => request.socket.destroy());
      try {
        const agentSlug = slug('reset');
        await projection.putAgent({ slug: agentSlug, access: 'public', upstreams: [crashing.address] });
        const response = await call({ host: hostOf(agentSlug) });
        assert.equal(response.status, 502);
        assert.equal(response.body, 'bad gateway: the agent is not reachable\n');
      } finally {
        await crashing.close();
      }
    });

    it('answers 503 in plain text, and forwards nothing, when authz cannot be reached (no socket, or nothing on the port)', async () => {
      const agentSlug = slug('no-authz');
      await projection.putAgent({ slug: agentSlug, access: 'public', upstreams: [replicaA.address] });
      for (const authzAddress of ['unix:/nonexistent/authz.sock', `127.0.0.1:${await freePort()}`]) {
        const blind = await startLocalEdge({ upstreamSubnets: LOOPBACK_UPSTREAMS, port: 0, authzAddress });
        const seen = replicaA.received.length;
        try {
          const response = await edgeRequest({ port: blind.port, host: hostOf(agentSlug) });
          assert.equal(response.status, 503, authzAddress);
          assert.equal(response.headers['content-type'], 'text/plain');
          assert.equal(response.body, 'service unavailable: the edge cannot check requests right now\n');
          assert.equal(replicaA.received.length, seen);
        } finally {
          await blind.close();
        }
      }
    });
  });
});

function openStream({ port, host, method, path }: { port: number; host: string; method: string; path: string }): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    httpRequest({ host: '127.0.0.1', port, method, path, headers: { host, accept: 'text/event-stream' }, agent: false }, resolve)
      .on('error', reject)
      .end();
  });
}

function nextChunk(response: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    response.once('data', (chunk: Buffer) => {
      response.pause();
      resolve(chunk.toString());
    });
    response.once('error', reject);
  });
}

function readRest(response: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    response.on('data', (chunk: Buffer) => (text += chunk.toString()));
    response.on('end', () => resolve(text));
    response.on('error', reject);
    response.resume();
  });
}
