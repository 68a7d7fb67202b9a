import assert from 'node:assert/strict';
import { credentials } from '@grpc/grpc-js';
import type { Redis } from 'ioredis';
import { ManualClock } from './support/manual-clock.js';
import { applyAllowedMutations, verdictOf, type CheckResponse } from '../envoy/local-edge/authz-answer.js';
import { createAuthzClient, type AuthzClient, type CheckRequestMessage } from '../envoy/local-edge/authz-client.js';
import { buildCheckRequest } from '../envoy/local-edge/check-request.js';
import { loadAuthorizationService } from '../proto/load.js';
import { freePort } from '../scripts/lib/local-services.js';
import { connectTestRedis, EdgeProjectionWriter, newAccessKey, startTestAuthz, uniqueAgentDomain, type TestAuthz } from './support/edge-authz.js';
import { describeOnEachAuthzServer } from './support/authz-servers.js';
import { allowedResponse, answerWith, BROKEN_ANSWERS, startRawAuthzServer, type RawAuthzServer } from './support/raw-authz-server.js';

/**
 * The local edge's own gRPC client of authz (node:http2, grpc/grpc doc/PROTOCOL-HTTP2.md):
 * against a real authz, where it must read every answer as proto-loader's grpc-js client
 * does; and against a raw HTTP/2 server that answers wrongly, where every fault must be
 * a rejected call (the edge then answers 503 and forwards nothing).
 */
describe("the local edge's gRPC client of authz", () => {
  const checkFor = (host: string, authorization?: string, source = '203.0.113.9'): CheckRequestMessage =>
    buildCheckRequest({
      requestId: 'f7d2c1a0-0000-4000-8000-000000000001',
      method: 'GET',
      host,
      path: '/v1/chat?x=1',
      headers: { host, ...(authorization ? { authorization } : {}), 'x-envoy-external-address': source, 'x-request-id': 'f7d2c1a0-0000-4000-8000-000000000001', accept: 'text/plain' },
      peer: { address: source, port: 50123 },
      local: { address: '127.0.0.1', port: 7080 },
    });

  /** What the edge does with an answer: the denial as sent, or the replica and the headers it would forward. */
  const effectOf = (response: CheckResponse) => {
    const verdict = verdictOf(response);
    if (verdict.kind === 'deny') return verdict;
    const forwarded = applyAllowedMutations({ authorization: 'Bearer x', 'x-agent-id': 'spoofed', accept: 'text/plain' }, verdict);
    // The edge's span id is new in every Check; the rest of the traceparent is the request's.
    if (typeof forwarded.traceparent === 'string') forwarded.traceparent = forwarded.traceparent.replace(/-[0-9a-f]{16}-/, '-<edge span>-');
    return { upstream: verdict.upstream, agentId: verdict.agentId, forwarded };
  };

  describeOnEachAuthzServer('against a real authz', (server) => {
    const domain = uniqueAgentDomain('authz-client');
    const clock = new ManualClock(new Date('2031-05-06T07:08:20.000Z'));
    let redis: Redis;
    let projection: EdgeProjectionWriter;
    let authz: TestAuthz;
    let client: AuthzClient;
    let grpcJs: { Check(request: unknown, options: object, callback: (error: Error | null, response?: CheckResponse) => void): void; close(): void };
    const viaGrpcJs = (request: CheckRequestMessage) =>
      new Promise<CheckResponse>((resolve, reject) =>
        grpcJs.Check(request, { deadline: new Date(Date.now() + 5_000) }, (error, response) => (error ? reject(error) : resolve(response!))),
      );

    before(async () => {
      redis = connectTestRedis();
      projection = new EdgeProjectionWriter(redis);
      authz = await startTestAuthz({ redis, clock, agentDomain: domain, server });
      client = createAuthzClient(authz.authz.grpcAddress);
      const { Client } = loadAuthorizationService();
      grpcJs = new Client(authz.authz.grpcAddress, credentials.createInsecure()) as never;
    });

    after(async () => {
      client.close();
      grpcJs.close();
      await authz.close();
      await projection.cleanUp();
      redis.disconnect();
    });

    it("reads allows and denials (401, 404, 429, 503) exactly as proto-loader's grpc-js client does", async () => {
      const key = newAccessKey();
      await projection.putAgent({ slug: 'open', access: 'public', callerRpm: 3, upstreams: ['127.0.0.1:4101'], id: 'agt_open' });
      await projection.putAgent({ slug: 'closed', access: 'private', keys: [key], upstreams: ['127.0.0.1:4102'] });
      await projection.putAgent({ slug: 'empty', access: 'public' });
      const cases: [string, CheckRequestMessage][] = [
        ['allowed', checkFor(`open.${domain}:7080`, undefined, '203.0.113.1')],
        ['allowed with a key', checkFor(`closed.${domain}:7080`, `Bearer ${key}`)],
        ['no key', checkFor(`closed.${domain}:7080`)],
        ['no agent', checkFor(`nobody.${domain}:7080`)],
        ['no replica', checkFor(`empty.${domain}:7080`)],
      ];
      for (const [name, request] of cases) {
        assert.deepEqual(effectOf(await client.check(request, 5_000)), effectOf(await viaGrpcJs(request)), name);
      }
      assert.deepEqual(effectOf(await viaGrpcJs(cases[0]![1])), { upstream: '127.0.0.1:4101', agentId: 'agt_open', forwarded: { 'x-agent-id': 'agt_open', accept: 'text/plain', traceparent: '00-f7d2c1a0000040008000000000000001-<edge span>-01' } });
      // callerRpm 3, and three Checks came from 203.0.113.1 above: both clients now see 429.
      const limited = checkFor(`open.${domain}:7080`, undefined, '203.0.113.1');
      const [lean, reference] = [effectOf(await client.check(limited, 5_000)), effectOf(await viaGrpcJs(limited))];
      assert.equal('status' in lean && lean.status, 429);
      assert.deepEqual(lean, reference);
    });

    it('asks authz on every request: a revoked key is refused on the next Check', async () => {
      const key = newAccessKey();
      await projection.putAgent({ slug: 'revoking', access: 'private', keys: [key], upstreams: ['127.0.0.1:4103'] });
      const request = checkFor(`revoking.${domain}:7080`, `Bearer ${key}`);
      assert.equal(verdictOf(await client.check(request, 5_000)).kind, 'allow');
      await projection.revokeKey('revoking', key);
      const after = verdictOf(await client.check(request, 5_000));
      assert.equal(after.kind === 'deny' && after.status, 401);
    });
  });

  describe('against a raw HTTP/2 server', () => {
    let server: RawAuthzServer;
    let client: AuthzClient;
    const request = checkFor('agent.example.test:7080', 'Bearer agk_secret');

    beforeEach(async () => {
      server = await startRawAuthzServer();
      client = createAuthzClient(server.address);
    });

    afterEach(async () => {
      client.close();
      await server.close();
    });

    it('sends a Check as PROTOCOL-HTTP2.md says, with the whole CheckRequest, and takes an allowing answer', async () => {
      const verdict = verdictOf(await client.check(request, 250));
      assert.deepEqual(verdict.kind === 'allow' && [verdict.upstream, verdict.agentId], ['127.0.0.1:9', 'agt_raw']);
      const [call] = server.calls;
      assert.equal(call?.headers[':method'], 'POST');
      assert.equal(call?.headers[':path'], '/envoy.service.auth.v3.Authorization/Check');
      assert.equal(call?.headers['content-type'], 'application/grpc');
      assert.equal(call?.headers.te, 'trailers');
      assert.equal(call?.headers['grpc-timeout'], '250m');
      const http = (call?.request as { attributes: { request: { http: Record<string, unknown> } } }).attributes.request.http;
      assert.equal(http.host, 'agent.example.test:7080');
      assert.deepEqual(http.headers, { authorization: 'Bearer agk_secret', 'x-envoy-external-address': '203.0.113.9', 'x-request-id': 'f7d2c1a0-0000-4000-8000-000000000001' });
    });

    for (const broken of BROKEN_ANSWERS) {
      it(`rejects ${broken.name}`, async () => {
        server.answer = (stream) => broken.answer(stream, '127.0.0.1:9');
        await assert.rejects(client.check(request, 2_000), /authz Check failed/);
      });
    }

    it('rejects a call past its deadline, and keeps a connection that still answers PING', async () => {
      server.answer = () => undefined; // never answers
      await assert.rejects(client.check(request, 100), /deadline of 100 ms exceeded/);
      server.answer = (stream) => answerWith(stream, allowedResponse('127.0.0.1:10'));
      assert.equal(verdictOf(await client.check(request, 2_000)).kind, 'allow');
      assert.equal(server.sessions.length, 1, 'one connection throughout');
    });

    it('after GOAWAY, opens a new connection for the next call', async () => {
      server.answer = (stream) => {
        answerWith(stream, allowedResponse('127.0.0.1:11'));
        stream.session?.goaway();
      };
      assert.equal(verdictOf(await client.check(request, 2_000)).kind, 'allow');
      assert.equal(verdictOf(await client.check(request, 2_000)).kind, 'allow');
      assert.equal(server.sessions.length, 2);
    });

    it('rejects while authz is down, and reconnects once it listens again', async () => {
      const port = await freePort();
      const later = createAuthzClient(`127.0.0.1:${port}`);
      try {
        await assert.rejects(later.check(request, 2_000), /authz Check failed|ECONNREFUSED/);
        const restarted = await startRawAuthzServer(port);
        try {
          assert.equal(verdictOf(await later.check(request, 2_000)).kind, 'allow');
          // authz drops the connection: a call racing the close may fail (closed), the next one reconnects.
          for (const session of restarted.sessions) session.destroy();
          await later.check(request, 2_000).catch(() => undefined);
          assert.equal(verdictOf(await later.check(request, 2_000)).kind, 'allow');
          assert.equal(restarted.sessions.length, 2);
        } finally {
          await restarted.close();
        }
      } finally {
        later.close();
      }
    });
  });
});
