import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import { ManualClock } from './support/manual-clock.js';
import { startLocalEdge, type RunningLocalEdge } from '../envoy/local-edge/server.js';
import { ensureLocalTls } from '../scripts/lib/local-tls.js';
import { EdgeProjection } from '../control/edge/projection.js';
import { edgeKeyNames, ACME_CHALLENGE_PATH } from '../contract/edge-keys.js';
import { loadAuthorizationService } from '../proto/load.js';
import { fieldsOf, type CheckRequest } from '../authz/check-request.js';
import { decodeCheckRequestFields } from '../authz/check-request-decoder.js';
import {
  connectTestRedis, denialOf, envoyCheckRequest, EdgeProjectionWriter, newAccessKey, startTestAuthz, uniqueAgentDomain, type TestAuthz,
} from './support/edge-authz.js';
import { edgeRequest, LOOPBACK_UPSTREAMS, startUpstream, type EdgeResponse, type TestUpstream } from './support/edge-upstream.js';
import { waitFor } from './support/wait.js';

/**
 * Custom domains through the real edge (issue 34): the control API's projection writes
 * (control/edge/projection.ts) on real Redis, a real authz over gRPC, and the local edge
 * forwarding to a replica on loopback. Callers come from their own 127.0.0.x address, so
 * each test's per-caller counters are its own.
 */
describe('custom domains at the edge', function () {
  this.timeout(60_000);
  const domain = uniqueAgentDomain('custom-domains');
  const clock = new ManualClock(new Date('2031-05-06T07:08:20.000Z'));
  let redis: Redis;
  let agents: EdgeProjectionWriter;
  let projection: EdgeProjection;
  let authz: TestAuthz;
  let edge: RunningLocalEdge;
  let redirectingEdge: RunningLocalEdge;
  let replica: TestUpstream;
  let tlsDir: string;
  let nextId = 0;
  const slug = (label: string) => `${label}-${++nextId}`;
  /** A custom hostname no other test uses (outside the agent domain, as the control API requires). */
  const customHost = (label: string) => `${label}-${++nextId}.example.test`;
  /** A caller address of its own (127.0.0.10 and up), so per-caller windows never mix across tests. */
  const caller = () => `127.0.0.${10 + ++nextId}`;
  const platformHost = (agentSlug: string) => `${agentSlug}.${domain}:7080`;
  const get = (host: string, options: { path?: string; localAddress?: string; headers?: Record<string, string>; port?: number } = {}) =>
    edgeRequest({ port: options.port ?? edge.port, host, path: options.path, localAddress: options.localAddress, headers: options.headers });
  /** authz learns a new hostname from the domain-events channel: wait until the edge routes it. */
  const routed = (host: string, localAddress: string, headers: Record<string, string> = {}) =>
    waitFor(`${host} to route`, async () => {
      const answer = await get(host, { localAddress, headers });
      return answer.status === 404 ? undefined : answer;
    });
  const acmeToken = () => randomBytes(24).toString('base64url');

  before(async function () {
    redis = connectTestRedis();
    agents = new EdgeProjectionWriter(redis);
    projection = new EdgeProjection(redis, redis.options.keyPrefix);
    authz = await startTestAuthz({ redis, clock, agentDomain: domain });
    edge = await startLocalEdge({ upstreamSubnets: LOOPBACK_UPSTREAMS, port: 0, authzAddress: authz.authz.grpcAddress });
    tlsDir = mkdtempSync(join(tmpdir(), 'custom-domains-'));
    const tls = ensureLocalTls({ dir: tlsDir, domain });
    redirectingEdge = await startLocalEdge({
      upstreamSubnets: LOOPBACK_UPSTREAMS,
      port: 0,
      authzAddress: authz.authz.grpcAddress,
      tls: { certFile: tls.certFile, keyFile: tls.keyFile, port: 0 },
      httpRedirect: true,
    });
    replica = await startUpstream('a');
  });

  after(async function () {
    await edge?.close();
    await redirectingEdge?.close();
    await authz?.close();
    await replica?.close();
    await agents?.cleanUp();
    await redis?.del(edgeKeyNames.domainHosts, edgeKeyNames.certificates);
    redis?.disconnect();
    if (tlsDir) rmSync(tlsDir, { recursive: true, force: true });
  });

  it('routes an active custom hostname to the agent, as its platform hostname', async () => {
    const agentSlug = slug('public');
    const hostname = customHost('chat');
    const agentId = await agents.putAgent({ slug: agentSlug, access: 'public', upstreams: [replica.address] });
    const from = caller();
    assert.equal((await get(hostname, { localAddress: from })).status, 404, 'not routed before the control API projects it');

    await projection.putDomain(agentSlug, hostname);
    const answer = await routed(`${hostname.toUpperCase()}:7080`, from);

    assert.equal(answer.status, 200);
    assert.equal(JSON.parse(answer.body).upstream, 'a');
    const reached = replica.received.at(-1)!;
    assert.equal(reached.headers['x-agent-id'], agentId);
    assert.equal(reached.headers.host, `${hostname.toUpperCase()}:7080`, 'the agent sees the Host the caller sent');
  });

  it('asks a private agent for its key on the custom hostname, as on the platform hostname', async () => {
    const agentSlug = slug('private');
    const hostname = customHost('private');
    const key = newAccessKey();
    await agents.putAgent({ slug: agentSlug, access: 'private', keys: [key], upstreams: [replica.address] });
    await projection.putDomain(agentSlug, hostname);
    const from = caller();
    await routed(hostname, from, { authorization: `Bearer ${key}` });

    const attempts: Record<string, string>[] = [{}, { authorization: `Bearer ${newAccessKey()}` }];
    for (const headers of attempts) {
      const onCustom = await get(hostname, { localAddress: from, headers });
      const onPlatform = await get(platformHost(agentSlug), { localAddress: from, headers });
      assert.equal(onCustom.status, 401);
      assert.deepEqual([onCustom.status, onCustom.body, onCustom.headers['www-authenticate']], [onPlatform.status, onPlatform.body, onPlatform.headers['www-authenticate']]);
    }
    const withKey = await get(hostname, { localAddress: from, headers: { authorization: `Bearer ${key}` } });
    assert.equal(withKey.status, 200);
    assert.equal(replica.received.at(-1)!.headers.authorization, undefined, 'the agent never sees its key');
  });

  it('counts both hostnames of an agent on the same rate-limit windows', async () => {
    const agentSlug = slug('limited');
    const hostname = customHost('limited');
    await agents.putAgent({ slug: agentSlug, access: 'public', callerRpm: 3, upstreams: [replica.address] });
    await projection.putDomain(agentSlug, hostname);
    const from = caller();
    await routed(hostname, from); // 1 of 3

    assert.equal((await get(platformHost(agentSlug), { localAddress: from })).status, 200); // 2 of 3
    assert.equal((await get(hostname, { localAddress: from })).status, 200); // 3 of 3
    const custom = await get(hostname, { localAddress: from });
    const platform = await get(platformHost(agentSlug), { localAddress: from });
    assert.deepEqual([custom.status, platform.status], [429, 429]);
    assert.equal(custom.body, 'rate limit exceeded\n');
  });

  it('stops routing a removed hostname at the next request, before authz hears of it', async () => {
    const agentSlug = slug('removed');
    const hostname = customHost('removed');
    const other = customHost('kept');
    await agents.putAgent({ slug: agentSlug, access: 'public', upstreams: [replica.address] });
    await projection.putDomain(agentSlug, hostname);
    await projection.putDomain(agentSlug, other);
    const from = caller();
    await routed(hostname, from);
    await routed(other, from);

    // Only the agent's set loses it: no hash change and no message, so authz's copy still
    // names the hostname. The Check script's SISMEMBER alone turns it away.
    await redis.srem(edgeKeyNames.domains(agentSlug), hostname);
    const seen = replica.received.length;
    const gone = await get(hostname, { localAddress: from });
    assert.equal(gone.status, 404);
    assert.equal(gone.body, 'no agent at this address\n');
    assert.equal(replica.received.length, seen, 'the replica was not reached');

    // The control API's removal: 404 on the very next request, the platform hostname unaffected.
    await projection.removeDomain(agentSlug, other);
    assert.equal((await get(other, { localAddress: from })).status, 404);
    assert.equal((await get(platformHost(agentSlug), { localAddress: from })).status, 200);
    assert.equal(await redis.hget(edgeKeyNames.domainHosts, other), null);
  });

  it('answers 404 for a hostname no agent claims, and for a hash entry its agent set does not prove', async () => {
    const from = caller();
    const nobody = await get(customHost('nobody'), { localAddress: from });
    assert.equal(nobody.status, 404);
    assert.equal(nobody.body, 'no agent at this address\n');

    // A hash entry alone (a hostname the control API never finished projecting, or one a
    // copy of the hash still names) routes nowhere: the agent's set is the proof.
    const agentSlug = slug('unproven');
    const hostname = customHost('unproven');
    await agents.putAgent({ slug: agentSlug, access: 'public', upstreams: [replica.address] });
    await redis.hset(edgeKeyNames.domainHosts, hostname, agentSlug);
    await redis.publish(`${redis.options.keyPrefix}edge:domain-events`, hostname);
    const seen = replica.received.length;
    assert.equal((await get(hostname, { localAddress: from })).status, 404);
    assert.equal(replica.received.length, seen);
  });

  describe('ACME HTTP-01 challenges', () => {
    it('answers the stored key authorization for any Host, reaching no agent and spending no limit', async () => {
      const agentSlug = slug('acme');
      const hostname = customHost('acme');
      await agents.putAgent({ slug: agentSlug, access: 'private', callerRpm: 1, keys: [newAccessKey()], upstreams: [replica.address] });
      const token = acmeToken();
      const keyAuthorization = `${token}.${randomBytes(32).toString('base64url')}`;
      await projection.putChallenge(token, keyAuthorization, 60);
      const from = caller();
      const seen = replica.received.length;

      // The CA asks the custom hostname before it routes (no putDomain yet), several times.
      for (const host of [hostname, `${hostname}:80`, platformHost(agentSlug)]) {
        const answer = await get(host, { path: `${ACME_CHALLENGE_PATH}${token}`, localAddress: from });
        assert.deepEqual([answer.status, answer.headers['content-type'], answer.body], [200, 'text/plain', keyAuthorization]);
      }
      assert.equal(replica.received.length, seen, 'no challenge reached the agent');
      // callerRpm 1: the challenges above took none of it, so the first Check still counts as 1 (401: no key).
      assert.equal((await get(platformHost(agentSlug), { localAddress: from })).status, 401);
    });

    it('answers 404 for a token it has no key authorization for, and after the control API removes it', async () => {
      const from = caller();
      const unknown = await get(customHost('acme'), { path: `${ACME_CHALLENGE_PATH}${acmeToken()}`, localAddress: from });
      assert.deepEqual([unknown.status, unknown.body], [404, 'no ACME challenge at this address\n']);
      assert.equal((await get(customHost('acme'), { path: `${ACME_CHALLENGE_PATH}not*a*token`, localAddress: from })).status, 404);

      const token = acmeToken();
      await projection.putChallenge(token, `${token}.thumbprint`, 60);
      assert.equal((await get(customHost('acme'), { path: `${ACME_CHALLENGE_PATH}${token}`, localAddress: from })).status, 200);
      await projection.removeChallenge(token);
      assert.equal((await get(customHost('acme'), { path: `${ACME_CHALLENGE_PATH}${token}`, localAddress: from })).status, 404);
    });

    it('is answered on the plain port when EDGE_HTTP_REDIRECT sends everything else to https', async () => {
      const token = acmeToken();
      const keyAuthorization = `${token}.${randomBytes(32).toString('base64url')}`;
      await projection.putChallenge(token, keyAuthorization, 60);
      const hostname = customHost('redirected');
      const from = caller();

      const challenge = await get(hostname, { port: redirectingEdge.port, path: `${ACME_CHALLENGE_PATH}${token}?x=1`, localAddress: from });
      assert.deepEqual([challenge.status, challenge.body], [200, keyAuthorization]);
      const other: EdgeResponse = await get(hostname, { port: redirectingEdge.port, path: '/.well-known/other', localAddress: from });
      assert.equal(other.status, 308);
      assert.equal(other.headers.location, `https://${hostname}:${redirectingEdge.httpsPort}/.well-known/other`);
    });

    it('reaches Envoy as a denial with status 200 and the key authorization as its body', async () => {
      const token = acmeToken();
      await projection.putChallenge(token, `${token}.abc`, 60);
      const denial = denialOf(await authz.client.check({ host: 'chat.example.test', path: `${ACME_CHALLENGE_PATH}${token}` }));
      assert.notEqual(denial.grpcCode, 0, 'a non-OK status: Envoy sends the denied_response, never the upstream');
      assert.deepEqual([denial.httpStatus, denial.headers['content-type'], denial.body], ['OK', 'text/plain', `${token}.abc`]);
    });

    it('reads the challenge path alike in the fast decoder and in the full decode', () => {
      const check = loadAuthorizationService().service.Check!;
      for (const path of [`${ACME_CHALLENGE_PATH}tok?x=1`, '/.well-known/acme', '/v1/chat', ACME_CHALLENGE_PATH]) {
        const bytes = check.requestSerialize(envoyCheckRequest({ host: 'chat.example.test', path })) as Buffer;
        const full = fieldsOf(check.requestDeserialize(bytes) as CheckRequest);
        assert.deepEqual(decodeCheckRequestFields(bytes), full);
        assert.equal(full.challengePath, path.startsWith(ACME_CHALLENGE_PATH) ? path : undefined);
      }
    });
  });
});
