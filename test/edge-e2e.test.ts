import assert from 'node:assert/strict';
import type { Logger } from 'pino';
import { systemClock } from '../contract/clock.js';
import { edgeKeyNames, windowOf } from '../contract/edge-keys.js';
import { createLogger } from '../control/config/logger.js';
import { connectRedis } from '../control/db/redis.js';
import { Reconciler } from '../control/services/reconciler.js';
import { loadAuthzConfig } from '../authz/config.js';
import { startAuthz } from '../authz/server.js';
import { EDGE_REPLIES } from '../envoy/local-edge/envoy-parity.js';
import { startLocalEdge } from '../envoy/local-edge/server.js';
import { startControl, type TestControl } from './support/control-harness.js';
import { tempAuthzSocket } from './support/edge-authz.js';
import { edgeRequest, type EdgeResponse } from './support/edge-upstream.js';
import { startLocalEdgeStack, type LocalEdgeStack } from './support/local-edge-stack.js';
import { waitFor } from './support/wait.js';

/**
 * The whole edge path on real parts: the control API writes the projection, real
 * containers serve, authz answers over gRPC from real Redis, and the local edge obeys.
 */
describe('the edge: agent URLs through the local edge, authz and real agents', function () {
  this.timeout(180_000);
  let control: TestControl;
  let edge: LocalEdgeStack;
  const logger: Logger = createLogger('silent');

  before(async () => {
    control = await startControl({}, { orchestrate: true });
    edge = await startLocalEdgeStack(control);
  });
  after(async () => {
    await edge?.close();
    await control?.close();
  });

  /** A request to the edge as a caller at `source` (127.0.0.x) would send it. */
  function call(host: string, path = '/health', headers: Record<string, string> = {}, source = '127.0.0.2'): Promise<EdgeResponse> {
    return edgeRequest({ port: edge.port, host, path, headers, localAddress: source });
  }

  const hostOf = (agent: { url: string }) => new URL(agent.url).hostname;

  async function runningAgent(token: string, body: Record<string, unknown> = {}) {
    const created = await control.request('POST', '/agents', { token, body: { name: 'edge', api_key: 'sk-test', deploy: { replicas: 1 }, ...body } });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const key: Record<string, string> = created.body.access_key ? { authorization: `Bearer ${created.body.access_key}` } : {};
    // Each probe from an address of its own: every request counts against its caller's
    // allowance, so probing a slow start from one address would use up a low rate_limit_rpm
    // (a 429 until the next minute) before the agent ever answered.
    let probe = 0;
    await waitFor('the agent routable at the edge', async () => ((await call(hostOf(created.body), '/health', key, `127.0.1.${(probe++ % 250) + 1}`)).status === 200 ? true : undefined), 60_000, 250);
    return created.body;
  }

  it('answers 404 in plain text for a hostname no agent has', async () => {
    const response = await call(`nobody-xxxxxxxx.${control.config.agentUrl.domain}`);
    assert.equal(response.status, 404);
    assert.match(String(response.headers['content-type']), /text\/plain/);
    assert.equal((await call('example.com')).status, 404);
  });

  it('lets anyone call a public agent, and the agent sees its own id and no authorization', async () => {
    const { token } = await control.signUp();
    const agent = await runningAgent(token, { access: 'public' });
    const env = await call(hostOf(agent), '/cgi-bin/env', { authorization: 'Bearer agk_whatever', 'x-agent-id': 'agt_spoofed' });
    assert.equal(env.status, 200);
    assert.match(env.body, new RegExp(`^HTTP_X_AGENT_ID=${agent.id}$`, 'm'));
    assert.doesNotMatch(env.body, /HTTP_AUTHORIZATION/);
    assert.doesNotMatch(env.body, /agt_spoofed/);
  });

  it('holds a private agent to its live keys: 401 without, with a wrong and with a revoked key (on the very next request)', async () => {
    const { token } = await control.signUp();
    const agent = await runningAgent(token);
    const host = hostOf(agent);
    const missing = await call(host);
    assert.equal(missing.status, 401);
    assert.equal(missing.headers['www-authenticate'], 'Bearer');
    assert.equal((await call(host, '/health', { authorization: 'Bearer agk_wrong' })).status, 401);
    assert.equal((await call(host, '/health', { authorization: `Bearer ${agent.access_key}` })).status, 200);

    // Rotation: a second key works alongside, then the first is revoked and stops at once.
    const second = await control.request('POST', `/agents/${agent.id}/access-keys`, { token, body: { label: 'rotation' } });
    assert.equal((await call(host, '/health', { authorization: `Bearer ${second.body.key}` })).status, 200);
    const keys = (await control.request('GET', `/agents/${agent.id}/access-keys`, { token })).body.access_keys;
    const first = keys.find((k: { label: string }) => k.label === 'default');
    assert.equal((await control.request('DELETE', `/agents/${agent.id}/access-keys/${first.id}`, { token })).status, 204);
    assert.equal((await call(host, '/health', { authorization: `Bearer ${agent.access_key}` })).status, 401);
    assert.equal((await call(host, '/health', { authorization: `Bearer ${second.body.key}` })).status, 200);

    // Every key revoked: nobody gets in.
    assert.equal((await control.request('DELETE', `/agents/${agent.id}/access-keys/${second.body.id}`, { token })).status, 204);
    assert.equal((await call(host, '/health', { authorization: `Bearer ${second.body.key}` })).status, 401);
  });

  it('follows PATCH: a public agent made private refuses callers without a key at once', async () => {
    const { token } = await control.signUp();
    const agent = await runningAgent(token, { access: 'public' });
    assert.equal((await call(hostOf(agent))).status, 200);
    await control.request('PATCH', `/agents/${agent.id}`, { token, body: { access: 'private' } });
    assert.equal((await call(hostOf(agent))).status, 401);
  });

  it("counts what the agent answered: after 50 requests its metrics show request_count ≥ 50 and avg_latency_ms > 0 within 5 s", async () => {
    const { token } = await control.signUp();
    const agent = await runningAgent(token, { access: 'public' });
    // A fresh address: the readiness probes above used the default one's allowance.
    for (let i = 0; i < 50; i++) assert.equal((await call(hostOf(agent), '/health', {}, '127.0.0.6')).status, 200);
    const sample = await waitFor(
      'request_count ≥ 50',
      async () => {
        const response = await control.request('GET', `/agents/${agent.id}/metrics`, { token });
        return response.body.request_count >= 50 ? response.body : undefined;
      },
      5_000, // the deadline; the probes before the 50 count too, hence ≥
    );
    assert.ok(sample.avg_latency_ms > 0, `avg_latency_ms ${sample.avg_latency_ms}`);
    assert.equal(sample.error_count, 0);
  });

  it('limits each caller to rate_limit_rpm while another address still passes, with Retry-After', async () => {
    const { token } = await control.signUp();
    const agent = await runningAgent(token, { access: 'public', rate_limit_rpm: 5 });
    const host = hostOf(agent);
    // The window may have started with the readiness probe above; a fresh address starts clean.
    const statuses = [];
    for (let i = 0; i < 6; i++) statuses.push((await call(host, '/health', {}, '127.0.0.5')).status);
    assert.deepEqual(statuses, [200, 200, 200, 200, 200, 429]);
    const limited = await call(host, '/health', {}, '127.0.0.5');
    assert.equal(limited.status, 429);
    const retryAfter = Number(limited.headers['retry-after']);
    assert.ok(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 60, `Retry-After ${limited.headers['retry-after']}`);
    assert.equal((await call(host, '/health', {}, '127.0.0.3')).status, 200);
  });

  it("never lets unauthorised callers use up a private agent's allowance", async () => {
    const { token } = await control.signUp();
    const agent = await runningAgent(token);
    const host = hostOf(agent);
    // 400 requests without a key, from 5 addresses (each under the per-caller 120), all refused with 401.
    for (let address = 10; address < 15; address++) {
      const results = await Promise.all(Array.from({ length: 80 }, () => call(host, '/health', {}, `127.0.0.${address}`)));
      // Refused, each one: 401, or, when a loaded machine keeps the Check from answering in
      // time, the edge's fail-closed 503 (never forwarded either way).
      const refusedAs = results.map((r) => (r.status === 503 && r.body === EDGE_REPLIES.authzUnavailable ? 'unchecked 503' : String(r.status)));
      const counts = [...new Set(refusedAs)].map((status) => `${status}: ${refusedAs.filter((one) => one === status).length}`);
      assert.ok(refusedAs.every((status) => status === '401' || status === 'unchecked 503'), `statuses ${counts.join(', ')}`);
      assert.ok(refusedAs.includes('401'), `statuses ${counts.join(', ')}`);
    }
    // The plan allows 300 a minute per agent; the real caller still passes.
    assert.equal((await call(host, '/health', { authorization: `Bearer ${agent.access_key}` }, '127.0.0.20')).status, 200);
  });

  it('applies the plan per-agent limit across many addresses', async () => {
    const { token } = await control.signUp();
    const agent = await runningAgent(token, { access: 'public' });
    const host = hostOf(agent);
    // The burst must fall in one rate-limit window: start it early in a minute.
    await waitFor('the start of a minute', async () => (Date.now() % 60_000 < 40_000 ? true : undefined), 30_000, 250);
    const window = windowOf(new Date());
    // Waiting for the agent to answer used some of this minute's 300 (free plan).
    const slug = host.split('.')[0]!;
    const usedBefore = Number(await control.redis.get(edgeKeyNames.agentCounter(slug, window)));
    const results: EdgeResponse[] = [];
    for (let address = 30; address < 34; address++) {
      results.push(...(await Promise.all(Array.from({ length: 80 }, () => call(host, '/health', {}, `127.0.0.${address}`)))));
    }
    assert.equal(windowOf(new Date()), window, 'the burst stayed in one window');
    const outcomes = results.map((r) => `${r.status} ${r.body.trim().slice(0, 80)}`);
    const counts = [...new Set(outcomes)].map((outcome) => `${outcomes.filter((one) => one === outcome).length}× ${outcome}`).join('; ');
    // Admitted is what passed the limit: answered, or lost between the edge and a replica
    // swamped by the burst (the edge's own 502, seen once on a loaded CI machine). Either
    // way it spent the allowance; anything else is a wrong answer.
    const lostUpstream = results.filter((r) => r.status === 502 && r.body === EDGE_REPLIES.badGateway).length;
    const admitted = results.filter((r) => r.status === 200).length + lostUpstream;
    const limited = results.filter((r) => r.status === 429).length;
    // A check the edge gave up waiting for is its fail-closed 503, never forwarded (seen once
    // on a loaded CI machine): authz may still have counted it, admitted or not, so it stands
    // for one request on either side of the limit, and for nothing admitted past it.
    const unchecked = results.filter((r) => r.status === 503 && r.body === EDGE_REPLIES.authzUnavailable).length;
    assert.ok(admitted <= 300 - usedBefore && 300 - usedBefore <= admitted + unchecked, `${admitted} admitted after ${usedBefore} used: ${counts}`);
    assert.equal(admitted + limited + unchecked, 320, counts);
    assert.ok(lostUpstream + unchecked <= 8, `the edge lost the replica or the check for only a few: ${counts}`);
    // Each request counted once, the refused ones too.
    assert.equal(Number(await control.redis.get(edgeKeyNames.agentCounter(slug, window))), usedBefore + 320);
  });

  it('answers 503 while the agent has no running replica, and again once scaled to 0', async () => {
    const { token } = await control.signUp();
    const idle = await control.request('POST', '/agents', { token, body: { name: 'idle', access: 'public' } });
    const response = await call(hostOf(idle.body));
    assert.equal(response.status, 503);
    const agent = await runningAgent(token, { access: 'public' });
    await control.request('POST', `/agents/${agent.id}/scale`, { token, body: { direction: 'down', count: 1 } });
    await waitFor('503 after scaling to 0', async () => ((await call(hostOf(agent))).status === 503 ? true : undefined));
  });

  it('answers 502 for a container that does not listen', async () => {
    const { token } = await control.signUp();
    const created = await control.request('POST', '/agents', { token, body: { name: 'silent', access: 'public', deploy: { replicas: 1, env: [{ key: 'MODE', value: 'silent' }] } } });
    const response = await waitFor('routed after the grace period', async () => {
      const answer = await call(hostOf(created.body));
      return answer.status === 503 ? undefined : answer;
    });
    assert.equal(response.status, 502);
  });

  it('lets no client header pick another destination or identity', async () => {
    const { token } = await control.signUp();
    const target = await runningAgent(token, { access: 'public' });
    const other = await runningAgent(token, { access: 'public' });
    const otherStatus = await control.driver!.status(other.id);
    const otherAddress = otherStatus!.replicas[0]!.address!;
    const env = await call(hostOf(target), '/cgi-bin/env', {
      'x-envoy-original-dst-host': otherAddress,
      'x-forwarded-host': hostOf(other),
      'x-agent-id': other.id,
    });
    assert.equal(env.status, 200);
    assert.match(env.body, new RegExp(`^AGENT_ID=${target.id}$`, 'm'), 'the request reached the agent its Host names');
    assert.match(env.body, new RegExp(`^HTTP_X_AGENT_ID=${target.id}$`, 'm'));
    // A Host with another agent's name glued on is no agent at all.
    assert.equal((await call(`${hostOf(other)}.${hostOf(target)}`)).status, 404);
  });

  it('fails closed: 503 when authz cannot reach Redis', async () => {
    const { token } = await control.signUp();
    const agent = await runningAgent(token, { access: 'public' });
    const deadRedis = connectRedis('redis://127.0.0.1:1');
    const socket = tempAuthzSocket();
    const config = loadAuthzConfig({ REDIS_URL: 'redis://127.0.0.1:1', AUTHZ_GRPC_SOCKET: socket.path, AUTHZ_METRICS_PORT: '0', AGENT_DOMAIN: control.config.agentUrl.domain });
    const blindAuthz = await startAuthz(config, { redis: deadRedis, clock: systemClock, logger });
    const blindEdge = await startLocalEdge({ port: 0, authzAddress: blindAuthz.grpcAddress });
    try {
      const response = await edgeRequest({ port: blindEdge.port, host: hostOf(agent), path: '/health' });
      assert.equal(response.status, 503);
      assert.equal(response.body, EDGE_REPLIES.authzUnavailable);
    } finally {
      await blindEdge.close();
      await blindAuthz.close();
      deadRedis.disconnect();
      socket.remove();
    }
  });

  it('heals a flushed Redis through the reconciler, without any API call', async () => {
    const { token } = await control.signUp();
    const agent = await runningAgent(token);
    const host = hostOf(agent);
    await control.redis.flushall();
    assert.equal((await call(host, '/health', { authorization: `Bearer ${agent.access_key}` })).status, 404);
    await new Reconciler(control.control.services.runner!, control.control.services.edge, 60_000, logger).runOnce();
    assert.equal((await call(host, '/health', { authorization: `Bearer ${agent.access_key}` })).status, 200);
    assert.equal((await call(host)).status, 401, 'still private after the rebuild');
  });
});
