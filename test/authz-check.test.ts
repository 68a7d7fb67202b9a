import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type Server, type Socket } from 'node:net';
import { status as GrpcStatus } from '@grpc/grpc-js';
import { Redis } from 'ioredis';
import { ManualClock } from './support/manual-clock.js';
import { freePort } from '../scripts/lib/local-services.js';
import {
  connectTestRedis, denialOf, EdgeProjectionWriter, newAccessKey, startTestAuthz, uniqueAgentDomain,
  type DecodedCheckResponse, type TestAuthz,
} from './support/edge-authz.js';
import { describeOnEachAuthzServer } from './support/authz-servers.js';

/**
 * authz through a real grpc-js client calling Check exactly as Envoy's ext_authz does,
 * on the run's real Redis. Every agent has its own slug, so tests do not share counters.
 */
describeOnEachAuthzServer('authz Check (gRPC, as Envoy calls it)', (server) => {
  const domain = uniqueAgentDomain('authz-check');
  // Half past the minute: Retry-After is then 30 s.
  const clock = new ManualClock(new Date('2031-03-04T05:06:30.000Z'));
  let redis: Redis;
  let projection: EdgeProjectionWriter;
  let edge: TestAuthz;
  let nextSlug = 0;
  const slug = (label: string) => `${label}-${++nextSlug}`;
  const hostOf = (agentSlug: string) => `${agentSlug}.${domain}`;

  before(async () => {
    redis = connectTestRedis();
    projection = new EdgeProjectionWriter(redis);
    edge = await startTestAuthz({ redis, clock, agentDomain: domain, server });
  });

  after(async () => {
    await projection.cleanUp();
    await edge.close();
    redis.disconnect();
  });

  const allowed = (response: DecodedCheckResponse) => {
    assert.equal(response.status.code, GrpcStatus.OK, JSON.stringify(response));
    assert.equal(response.http_response, 'ok_response');
    return {
      agentId: response.ok_response!.headers.find((option) => option.header.key === 'x-agent-id')?.header.value,
      upstream: response.dynamic_metadata!.fields.upstream!.stringValue,
    };
  };

  describe('1. hostname', () => {
    it('answers 404 in plain text for hostnames no agent can have, and for an unknown slug', async () => {
      const agentSlug = slug('known');
      await projection.putAgent({ slug: agentSlug, access: 'public', upstreams: ['10.1.0.1:8080'] });
      const hosts = [
        hostOf('nobody-here'),
        `${agentSlug}.other.test`,
        `${agentSlug}.other.test:7080`,
        domain,
        `.${domain}`,
        `deep.${agentSlug}.${domain}`,
        `${agentSlug}.${domain}.evil.test`,
        `${agentSlug}${domain}`,
        '',
      ];
      for (const host of hosts) {
        const denial = denialOf(await edge.client.check({ host }));
        assert.equal(denial.httpStatus, 'NotFound', host);
        assert.notEqual(denial.grpcCode, GrpcStatus.OK);
        assert.deepEqual(denial.headers, { 'content-type': 'text/plain' });
        assert.equal(denial.body, 'no agent at this address\n');
        assert.ok(denial.appendFields.every((append) => append === null), 'denial headers carry no append');
      }
    });

    it('matches the hostname case-insensitively and without the port Envoy passes along', async () => {
      const agentSlug = slug('ports');
      await projection.putAgent({ slug: agentSlug, access: 'public', upstreams: ['10.1.0.2:8080'] });
      for (const host of [hostOf(agentSlug), `${hostOf(agentSlug)}:7080`, `${hostOf(agentSlug).toUpperCase()}:80`]) {
        assert.equal(allowed(await edge.client.check({ host })).upstream, '10.1.0.2:8080', host);
      }
    });
  });

  describe('6. allow', () => {
    it('sets x-agent-id (overwriting), removes authorization, names the upstream and counts usage', async () => {
      const agentSlug = slug('public');
      const id = await projection.putAgent({ slug: agentSlug, access: 'public', upstreams: ['10.2.0.1:8080'] });
      const requestId = '0af76519-16cd-43dd-8448-eb211c80319c';
      const response = await edge.client.check({ host: hostOf(agentSlug), headers: { authorization: 'Bearer agk_whatever', 'x-request-id': requestId } });
      assert.equal(response.status.code, 0);
      const edgeSpanId = response.dynamic_metadata!.fields.span_id!.stringValue;
      assert.match(edgeSpanId, /^[0-9a-f]{16}$/);
      assert.deepEqual(
        response.ok_response!.headers.map(({ header, append_action }) => ({ header: { key: header.key, value: header.value }, append_action })),
        [
          { header: { key: 'x-agent-id', value: id }, append_action: 'OVERWRITE_IF_EXISTS_OR_ADD' },
          // The trace the edge starts, named by the request id, its span the replica's parent (contract/edge-trace.ts).
          { header: { key: 'traceparent', value: `00-0af7651916cd43dd8448eb211c80319c-${edgeSpanId}-01` }, append_action: 'OVERWRITE_IF_EXISTS_OR_ADD' },
        ],
      );
      assert.deepEqual(response.ok_response!.headers_to_remove, ['authorization']);
      assert.deepEqual(Object.keys(response.dynamic_metadata!.fields).sort(), ['agent_id', 'parent_span_id', 'span_id', 'trace_id', 'upstream', 'version']);
      assert.equal(response.dynamic_metadata!.fields.version!.stringValue, 'stable', 'no canary runs');
      assert.equal(response.dynamic_metadata!.fields.upstream!.stringValue, '10.2.0.1:8080');
      assert.equal(response.dynamic_metadata!.fields.agent_id!.stringValue, id, 'named again in the access log, for the request figures');
      assert.equal(await redis.get(`edge:usage:{${agentSlug}}:2031-03`), '1');
    });

    it('picks among the running replicas', async () => {
      const agentSlug = slug('replicas');
      const upstreams = ['10.3.0.1:8080', '10.3.0.2:8080', '10.3.0.3:8080'];
      await projection.putAgent({ slug: agentSlug, access: 'public', callerRpm: 1000, agentRpm: 1000, upstreams });
      const seen = new Set<string>();
      for (let i = 0; i < 60; i += 1) seen.add(allowed(await edge.client.check({ host: hostOf(agentSlug) })).upstream);
      assert.deepEqual([...seen].sort(), upstreams);
    });
  });

  describe('3. access keys', () => {
    const keyA = newAccessKey();
    const keyB = newAccessKey();
    let agentSlug: string;

    before(async () => {
      agentSlug = slug('private');
      await projection.putAgent({ slug: agentSlug, access: 'private', callerRpm: 1000, keys: [keyA, keyB], upstreams: ['10.4.0.1:8080'] });
    });

    const expect401 = async (headers: Record<string, string>, why: string) => {
      const denial = denialOf(await edge.client.check({ host: hostOf(agentSlug), headers }));
      assert.equal(denial.httpStatus, 'Unauthorized', why);
      assert.equal(denial.grpcCode, GrpcStatus.UNAUTHENTICATED);
      assert.deepEqual(denial.headers, { 'content-type': 'text/plain', 'www-authenticate': 'Bearer' }, why);
      assert.equal(denial.body, 'missing or invalid access key\n');
    };

    it('refuses a private agent without a key, with a wrong key, or with a key not sent as Bearer', async () => {
      await expect401({}, 'no key');
      await expect401({ authorization: `Bearer ${newAccessKey()}` }, 'unknown key');
      await expect401({ authorization: `Bearer ${keyA}x` }, 'altered key');
      await expect401({ authorization: `Basic ${keyA}` }, 'not Bearer');
      await expect401({ authorization: keyA }, 'no scheme');
      await expect401({ authorization: 'Bearer agnt_notanagentkey' }, 'a personal API key');
    });

    it('accepts each live key, with the scheme in any case', async () => {
      for (const authorization of [`Bearer ${keyA}`, `Bearer ${keyB}`, `bearer ${keyA}`, `BEARER  ${keyB}`]) {
        allowed(await edge.client.check({ host: hostOf(agentSlug), headers: { authorization } }));
      }
    });

    it('refuses a revoked key on the very next call while the other key still works', async () => {
      allowed(await edge.client.check({ host: hostOf(agentSlug), headers: { authorization: `Bearer ${keyA}` } }));
      await projection.revokeKey(agentSlug, keyA);
      await expect401({ authorization: `Bearer ${keyA}` }, 'revoked key');
      allowed(await edge.client.check({ host: hostOf(agentSlug), headers: { authorization: `Bearer ${keyB}` } }));
      await projection.revokeKey(agentSlug, keyB);
      await expect401({ authorization: `Bearer ${keyB}` }, 'all keys revoked');
    });
  });

  describe('2. and 4. rate limits', () => {
    it('limits each caller address to caller_rpm a minute, with Retry-After, while another address passes', async () => {
      const agentSlug = slug('caller-limit');
      await projection.putAgent({ slug: agentSlug, access: 'public', callerRpm: 3, agentRpm: 100, upstreams: ['10.5.0.1:8080'] });
      for (let i = 0; i < 3; i += 1) allowed(await edge.client.check({ host: hostOf(agentSlug), source: '198.51.100.1' }));
      const denial = denialOf(await edge.client.check({ host: hostOf(agentSlug), source: '198.51.100.1' }));
      assert.equal(denial.httpStatus, 'TooManyRequests');
      assert.notEqual(denial.grpcCode, GrpcStatus.OK);
      assert.deepEqual(denial.headers, { 'content-type': 'text/plain', 'retry-after': '30' });
      assert.equal(denial.body, 'rate limit exceeded\n');
      allowed(await edge.client.check({ host: hostOf(agentSlug), source: '198.51.100.2' }));
      assert.equal(await redis.ttl(`edge:rl:{${agentSlug}}:caller:198.51.100.1:${Math.floor(clock.now().getTime() / 60_000)}`) > 60, true);
    });

    it('checks the caller limit before the key, so a caller over its limit gets 429 even with a valid key', async () => {
      const agentSlug = slug('caller-first');
      const key = newAccessKey();
      await projection.putAgent({ slug: agentSlug, access: 'private', callerRpm: 2, agentRpm: 100, keys: [key], upstreams: ['10.5.0.2:8080'] });
      for (let i = 0; i < 2; i += 1) {
        assert.equal(denialOf(await edge.client.check({ host: hostOf(agentSlug), source: '198.51.100.3' })).httpStatus, 'Unauthorized');
      }
      const denial = denialOf(await edge.client.check({ host: hostOf(agentSlug), source: '198.51.100.3', headers: { authorization: `Bearer ${key}` } }));
      assert.equal(denial.httpStatus, 'TooManyRequests');
    });

    it('does not let unauthorised callers use up the agent allowance', async () => {
      const agentSlug = slug('allowance');
      const key = newAccessKey();
      await projection.putAgent({ slug: agentSlug, access: 'private', callerRpm: 1000, agentRpm: 3, keys: [key], upstreams: ['10.5.0.3:8080'] });
      for (let i = 0; i < 20; i += 1) {
        const source = `192.0.2.${i + 1}`;
        assert.equal(denialOf(await edge.client.check({ host: hostOf(agentSlug), source })).httpStatus, 'Unauthorized');
      }
      for (let i = 0; i < 3; i += 1) {
        allowed(await edge.client.check({ host: hostOf(agentSlug), source: '192.0.2.200', headers: { authorization: `Bearer ${key}` } }));
      }
      const denial = denialOf(await edge.client.check({ host: hostOf(agentSlug), source: '192.0.2.201', headers: { authorization: `Bearer ${key}` } }));
      assert.equal(denial.httpStatus, 'TooManyRequests');
    });

    it('limits the agent to agent_rpm a minute across many addresses', async () => {
      const agentSlug = slug('agent-limit');
      await projection.putAgent({ slug: agentSlug, access: 'public', callerRpm: 120, agentRpm: 25, upstreams: ['10.5.0.4:8080'] });
      for (let i = 0; i < 25; i += 1) allowed(await edge.client.check({ host: hostOf(agentSlug), source: `203.0.113.${i + 1}` }));
      const denial = denialOf(await edge.client.check({ host: hostOf(agentSlug), source: '203.0.113.99' }));
      assert.equal(denial.httpStatus, 'TooManyRequests');
      assert.deepEqual(denial.headers, { 'content-type': 'text/plain', 'retry-after': '30' });
      assert.equal(await redis.get(`edge:usage:{${agentSlug}}:2031-03`), '25', 'only allowed requests count as usage');
    });

    it('gives Retry-After as the whole seconds to the window end, at least 1, and resets in the next window', async () => {
      const agentSlug = slug('retry-after');
      await projection.putAgent({ slug: agentSlug, access: 'public', callerRpm: 1, agentRpm: 100, upstreams: ['10.5.0.5:8080'] });
      const limitedClock = new ManualClock(new Date('2031-03-04T05:07:00.000Z'));
      const timed = await startTestAuthz({ redis, clock: limitedClock, agentDomain: domain, server });
      try {
        const retryAfterAt = async (iso: string) => {
          limitedClock.set(new Date(iso));
          return denialOf(await timed.client.check({ host: hostOf(agentSlug) })).headers['retry-after'];
        };
        allowed(await timed.client.check({ host: hostOf(agentSlug) }));
        assert.equal(await retryAfterAt('2031-03-04T05:07:00.000Z'), '60');
        assert.equal(await retryAfterAt('2031-03-04T05:07:00.001Z'), '60');
        assert.equal(await retryAfterAt('2031-03-04T05:07:58.999Z'), '2');
        assert.equal(await retryAfterAt('2031-03-04T05:07:59.400Z'), '1');
        assert.equal(await retryAfterAt('2031-03-04T05:07:59.999Z'), '1');
        limitedClock.set(new Date('2031-03-04T05:08:00.000Z'));
        allowed(await timed.client.check({ host: hostOf(agentSlug) }));
      } finally {
        await timed.close();
      }
    });

    it('counts the caller from x-envoy-external-address only when told Envoy is behind trusted proxies', async () => {
      const agentSlug = slug('external-address');
      await projection.putAgent({ slug: agentSlug, access: 'public', callerRpm: 1, agentRpm: 100, upstreams: ['10.5.0.6:8080'] });
      const proxied = await startTestAuthz({ redis, clock, agentDomain: domain, trustExternalAddress: true, server });
      try {
        const viaProxy = (client: string) => ({ host: hostOf(agentSlug), source: '10.9.9.9', headers: { 'x-envoy-external-address': client } });
        allowed(await proxied.client.check(viaProxy('198.51.100.50')));
        allowed(await proxied.client.check(viaProxy('198.51.100.51')));
        assert.equal(denialOf(await proxied.client.check(viaProxy('198.51.100.50'))).httpStatus, 'TooManyRequests');
        // Without the setting the header is ignored: both calls are the same peer.
        allowed(await edge.client.check(viaProxy('198.51.100.60')));
        assert.equal(denialOf(await edge.client.check(viaProxy('198.51.100.61'))).httpStatus, 'TooManyRequests');
      } finally {
        await proxied.close();
      }
    });
  });

  describe('5. replicas', () => {
    it('answers 503 in plain text while no replica runs, and allows once one does', async () => {
      const agentSlug = slug('no-replica');
      await projection.putAgent({ slug: agentSlug, access: 'public' });
      const denial = denialOf(await edge.client.check({ host: hostOf(agentSlug) }));
      assert.equal(denial.httpStatus, 'ServiceUnavailable');
      assert.deepEqual(denial.headers, { 'content-type': 'text/plain' });
      assert.equal(denial.body, 'no running replica\n');
      await projection.setUpstreams(agentSlug, ['10.6.0.1:8080']);
      assert.equal(allowed(await edge.client.check({ host: hostOf(agentSlug) })).upstream, '10.6.0.1:8080');
    });
  });

  describe('Redis', () => {
    it('runs the script by EVALSHA and recovers when Redis has forgotten it (SCRIPT FLUSH)', async () => {
      const agentSlug = slug('noscript');
      await projection.putAgent({ slug: agentSlug, access: 'public', upstreams: ['10.7.0.1:8080'] });
      const evalshaCalls = async () => Number(/cmdstat_evalsha:calls=(\d+)/.exec(await redis.info('commandstats'))?.[1] ?? 0);
      const before = await evalshaCalls();
      allowed(await edge.client.check({ host: hostOf(agentSlug) }));
      assert.ok((await evalshaCalls()) > before, 'the Check used EVALSHA');
      await redis.script('FLUSH');
      allowed(await edge.client.check({ host: hostOf(agentSlug) }));
      allowed(await edge.client.check({ host: hostOf(agentSlug) }));
    });

    it('fails closed with a 503 denial when the projection is malformed', async () => {
      const agentSlug = slug('malformed');
      await projection.putAgent({ slug: agentSlug, access: 'public', upstreams: ['10.7.0.2:8080'] });
      await redis.hdel(`edge:agent:{${agentSlug}}`, 'caller_rpm');
      assert.equal(denialOf(await edge.client.check({ host: hostOf(agentSlug) })).httpStatus, 'ServiceUnavailable');
    });

    it('answers 503 (never allows) when Redis is down, yet 404s hostnames without asking it', async () => {
      const deadRedis = new Redis(await freePort(), '127.0.0.1', { maxRetriesPerRequest: 1, retryStrategy: () => 200, lazyConnect: true });
      deadRedis.on('error', () => undefined);
      const cutOff = await startTestAuthz({ redis: deadRedis, clock, agentDomain: domain, server });
      try {
        const denial = denialOf(await cutOff.client.check({ host: hostOf('anything') }));
        assert.equal(denial.httpStatus, 'ServiceUnavailable');
        assert.notEqual(denial.grpcCode, GrpcStatus.OK);
        assert.equal(denial.body, 'service unavailable: the edge cannot check requests right now\n');
        assert.equal(denialOf(await cutOff.client.check({ host: 'elsewhere.example.com' })).httpStatus, 'NotFound');
        assert.deepEqual(await cutOff.client.healthCheck(), { status: 'NOT_SERVING' });
      } finally {
        await cutOff.close();
        deadRedis.disconnect();
      }
    });

    it('answers 503 when Redis accepts the connection but does not reply within the deadline', async () => {
      const silent = await startSilentServer();
      const hungRedis = new Redis(silent.port, '127.0.0.1', { maxRetriesPerRequest: 1 });
      hungRedis.on('error', () => undefined);
      const stalled = await startTestAuthz({ redis: hungRedis, clock, agentDomain: domain, redisTimeoutMs: 50, server });
      try {
        assert.equal(denialOf(await stalled.client.check({ host: hostOf('anything') })).httpStatus, 'ServiceUnavailable');
        const metrics = await (await fetch(`http://127.0.0.1:${stalled.authz.metricsPort}/metrics`)).text();
        assert.match(metrics, /^agent_platform_authz_checks_total\{decision="denied",reason="unavailable"\} 1$/m);
        assert.match(metrics, /^agent_platform_authz_redis_errors_total 1$/m);
      } finally {
        await stalled.close();
        hungRedis.disconnect();
        await silent.close();
      }
    });
  });

  describe('health and metrics', () => {
    it('serves grpc.health.v1.Health: SERVING while Redis answers PING, NOT_FOUND for other services', async () => {
      assert.deepEqual(await edge.client.healthCheck(), { status: 'SERVING' });
      assert.deepEqual(await edge.client.healthCheck('envoy.service.auth.v3.Authorization'), { status: 'SERVING' });
      await assert.rejects(edge.client.healthCheck('some.other.Service'), (error: { code: number }) => error.code === GrpcStatus.NOT_FOUND);
    });

    it('exposes checks by outcome, a latency histogram and Redis errors at /metrics', async () => {
      const response = await fetch(`http://127.0.0.1:${edge.authz.metricsPort}/metrics`);
      assert.equal(response.status, 200);
      const text = await response.text();
      for (const reason of ['unknown_agent', 'invalid_key', 'caller_rate_limited', 'agent_rate_limited', 'no_replica', 'unavailable']) {
        assert.match(text, new RegExp(`^agent_platform_authz_checks_total\\{decision="denied",reason="${reason}"\\} \\d+$`, 'm'), reason);
      }
      assert.match(text, /^agent_platform_authz_checks_total\{decision="allowed",reason="allowed"\} [1-9]\d*$/m);
      assert.match(text, /^agent_platform_authz_check_duration_seconds_count [1-9]\d*$/m);
      assert.match(text, /^agent_platform_authz_redis_errors_total \d+$/m);
      assert.equal((await fetch(`http://127.0.0.1:${edge.authz.metricsPort}/other`)).status, 404);
    });
  });
});

/** A TCP server that accepts connections and never answers: a hung Redis. */
async function startSilentServer(): Promise<{ port: number; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    port: (server.address() as { port: number }).port,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
