import assert from 'node:assert/strict';
import type { Redis } from 'ioredis';
import { ManualClock } from './support/manual-clock.js';
import { systemClock } from '../contract/clock.js';
import { createRequestFigureRecorder, type RequestFigureRecorder } from '../contract/request-figure-recorder.js';
import { RequestFiguresReader } from '../control/edge/request-figures.js';
import { waitFor } from './support/wait.js';
import { startLocalEdge, type RunningLocalEdge } from '../envoy/local-edge/server.js';
import { EdgeProjection } from '../control/edge/projection.js';
import { edgeKeyNames, previewLabel, type EdgeAgent, type EdgeCanary } from '../contract/edge-keys.js';
import { routeHost } from '../authz/host-routes.js';
import { connectTestRedis, newAccessKey, sha256Hex, startTestAuthz, uniqueAgentDomain, type TestAuthz } from './support/edge-authz.js';
import { edgeRequest, LOOPBACK_UPSTREAMS, startUpstream, type TestUpstream } from './support/edge-upstream.js';

/**
 * The edge's half of canary deploys (issue 36): the control API's projection names a canary
 * (percent, affinity, deployment) and its replicas, and authz's one Check splits traffic
 * between the versions, through the local edge to replicas on loopback. Real Redis, real
 * authz over gRPC.
 */
describe('canary traffic split at the edge', function () {
  this.timeout(120_000);
  const domain = uniqueAgentDomain('canary');
  const clock = new ManualClock(new Date('2031-07-01T10:00:00.000Z'));
  let redis: Redis;
  let projection: EdgeProjection;
  let authz: TestAuthz;
  let edge: RunningLocalEdge;
  let stable: TestUpstream;
  let canaryReplica: TestUpstream;
  let recorder: RequestFigureRecorder;
  let nextId = 0;
  const slugs: string[] = [];

  /** An agent with a stable replica and, when `canary` is given, a canary replica. */
  async function project(options: { access: EdgeAgent['access']; canary: EdgeCanary | null; keys?: string[] }): Promise<string> {
    const slug = `canary-${++nextId}-x1y2z3w4`;
    slugs.push(slug);
    await projection.replace({
      agent: { id: `agt_${slug}`, accountId: 'acc_canary', slug, access: options.access, callerRpm: 1_000_000, agentRpm: 1_000_000, wakeable: false, canary: options.canary },
      keyHashes: (options.keys ?? []).map(sha256Hex),
      upstreams: [stable.address],
      canaryUpstreams: [canaryReplica.address],
    });
    return slug;
  }

  const versionOf = async (host: string, headers: Record<string, string> = {}, localAddress = '127.0.0.1') => {
    const answer = await edgeRequest({ port: edge.port, host, headers, localAddress });
    assert.equal(answer.status, 200, answer.body);
    return answer.headers['x-upstream'] === 'canary' ? 'canary' : 'stable';
  };

  before(async function () {
    redis = connectTestRedis();
    projection = new EdgeProjection(redis, redis.options.keyPrefix);
    authz = await startTestAuthz({ redis, clock, agentDomain: domain });
    recorder = createRequestFigureRecorder({ redis, flushIntervalMs: 100, onError: (error) => assert.fail(error) });
    edge = await startLocalEdge({ upstreamSubnets: LOOPBACK_UPSTREAMS, port: 0, authzAddress: authz.authz.grpcAddress, requestFigures: recorder });
    stable = await startUpstream('stable');
    canaryReplica = await startUpstream('canary');
  });

  after(async function () {
    await edge?.close();
    await recorder?.close();
    await authz?.close();
    await stable?.close();
    await canaryReplica?.close();
    for (const slug of slugs) await projection.removeAgent(slug);
    redis?.disconnect();
  });

  it('sends a 10% canary between 7.5% and 12.5% of 2,000 requests, the rest to the stable version', async function () {
    const slug = await project({ access: 'public', canary: { deployment: 4, percent: 10, affinity: 'none' } });
    let toCanary = 0;
    for (let i = 0; i < 2_000; i++) if ((await versionOf(`${slug}.${domain}`)) === 'canary') toCanary++;
    assert.ok(toCanary >= 150 && toCanary <= 250, `${toCanary} of 2,000 reached the canary`);
    // The edge's figures tell the versions apart, as the canary's judge reads them.
    const reader = new RequestFiguresReader(redis, systemClock);
    const figures = await waitFor('the figures of 2,000 requests', async () => {
      const byVersion = await reader.byVersion(`agt_${slug}`);
      return byVersion.canary.requestCount + byVersion.stable.requestCount === 2_000 ? byVersion : undefined;
    });
    assert.equal(figures.canary.requestCount, toCanary);
    assert.equal(figures.stable.requestCount, 2_000 - toCanary);
  });

  it('with caller affinity, each of 50 callers (their keys) sees exactly one version, and about the share see the canary', async function () {
    const keys = Array.from({ length: 50 }, () => newAccessKey());
    const slug = await project({ access: 'private', canary: { deployment: 7, percent: 30, affinity: 'caller' }, keys });
    const seen = new Map<string, Set<string>>();
    for (let round = 0; round < 6; round++) {
      for (const key of keys) {
        const version = await versionOf(`${slug}.${domain}`, { authorization: `Bearer ${key}` });
        seen.set(key, (seen.get(key) ?? new Set()).add(version));
      }
    }
    assert.deepEqual([...seen.values()].filter((versions) => versions.size !== 1), [], 'no caller switched versions');
    const onCanary = [...seen.values()].filter((versions) => versions.has('canary')).length;
    assert.ok(onCanary > 0 && onCanary < 50, `${onCanary} of 50 callers on the canary: both versions have callers`);
  });

  it('with caller affinity on a public agent, the address decides: another Authorization header cannot switch versions', async function () {
    const slug = await project({ access: 'public', canary: { deployment: 9, percent: 50, affinity: 'caller' } });
    for (const address of ['127.0.0.21', '127.0.0.22', '127.0.0.23', '127.0.0.24']) {
      const versions = new Set<string>();
      for (let i = 0; i < 8; i++) versions.add(await versionOf(`${slug}.${domain}`, { authorization: `Bearer ${newAccessKey()}` }, address));
      assert.equal(versions.size, 1, `${address} saw ${[...versions].join(' and ')}`);
    }
  });

  it('the preview hostname reaches only the canary; another deployment number, or none running, is a 404', async function () {
    const slug = await project({ access: 'public', canary: { deployment: 12, percent: 1, affinity: 'none' } });
    for (let i = 0; i < 30; i++) assert.equal(await versionOf(`${previewLabel(slug, 12)}.${domain}`), 'canary');
    assert.equal((await edgeRequest({ port: edge.port, host: `${previewLabel(slug, 11)}.${domain}` })).status, 404);
    const plain = await project({ access: 'public', canary: null });
    assert.equal((await edgeRequest({ port: edge.port, host: `${previewLabel(plain, 1)}.${domain}` })).status, 404);
  });

  it("a private agent's preview needs a key, as its own hostname does", async function () {
    const key = newAccessKey();
    const slug = await project({ access: 'private', canary: { deployment: 3, percent: 20, affinity: 'none' }, keys: [key] });
    const host = `${previewLabel(slug, 3)}.${domain}`;
    assert.equal((await edgeRequest({ port: edge.port, host })).status, 401);
    assert.equal(await versionOf(host, { authorization: `Bearer ${key}` }), 'canary');
  });

  it('once the canary ends (putAgent without one), its fields and replicas go: everything to the stable version, the preview 404', async function () {
    const slug = await project({ access: 'public', canary: { deployment: 5, percent: 99, affinity: 'none' } });
    await projection.putAgent({ id: `agt_${slug}`, accountId: 'acc_canary', slug, access: 'public', callerRpm: 1_000_000, agentRpm: 1_000_000, wakeable: false });
    assert.equal(await redis.exists(edgeKeyNames.canaryUpstreams(slug)), 0);
    for (let i = 0; i < 40; i++) assert.equal(await versionOf(`${slug}.${domain}`), 'stable');
    assert.equal((await edgeRequest({ port: edge.port, host: `${previewLabel(slug, 5)}.${domain}` })).status, 404);
  });

  it('routes preview labels only under the agent domain, and never a custom hostname as a preview', function () {
    const none = { slugOf: () => undefined };
    assert.deepEqual(routeHost(`shop-ab12cd34--d17.${domain}:7080`, domain, none), { slug: 'shop-ab12cd34', customHost: null, previewDeployment: 17 });
    assert.deepEqual(routeHost(`shop-ab12cd34.${domain}`, domain, none), { slug: 'shop-ab12cd34', customHost: null, previewDeployment: null });
    assert.deepEqual(routeHost(`shop--d0.${domain}`, domain, none), { slug: 'shop--d0', customHost: null, previewDeployment: null }, 'no deployment 0: an unknown slug');
    assert.deepEqual(routeHost('app--d3.example.com', domain, { slugOf: (host) => (host === 'app--d3.example.com' ? 'app-1' : undefined) }), {
      slug: 'app-1',
      customHost: 'app--d3.example.com',
      previewDeployment: null,
    });
  });
});
