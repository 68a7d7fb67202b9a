import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { edgeKeyNames } from '../contract/edge-keys.js';
import { EdgeProjection } from '../control/edge/projection.js';
import { freePort, startRedis, type RunningService } from '../scripts/lib/local-services.js';
import { startControl, type TestControl } from './support/control-harness.js';
import { createAgent, expectError, expectStatus, signUpMember } from './support/control-api.js';
import { whileFrozen } from './support/freeze.js';
import { waitFor } from './support/wait.js';

/** A new account (free plan) with one agent. */
const accountWithAgent = async (control: TestControl) => {
  const { token, user } = await control.signUp();
  const agent = await createAgent(control, token);
  const { slug } = await control.db('agents').where({ id: agent.id }).first();
  return { token, user, agent, slug: slug as string };
};
const addDomain = (control: TestControl, token: string, agentId: string, hostname: string) => control.request('POST', `/agents/${agentId}/domains`, { token, body: { hostname } });
const unique = (name: string) => `${name}-${Math.random().toString(36).slice(2, 8)}.example.com`;

/**
 * The domain as the worker leaves it after its first look, which a new domain (or a check
 * asked for) wakes it to take: the harness's DNS_RESOLVER refuses every lookup, so the
 * domain stays pending with the resolver's reason. Also what a test waits for before it
 * edits the row by hand, so that the worker's write does not land on top of its own.
 */
const afterWorkerLooked = (control: TestControl, token: string, agentId: string, domainId: string, before: string | null = null) =>
  waitFor('the domain worker to look at the domain', async () => {
    const { body } = await control.request('GET', `/agents/${agentId}/domains/${domainId}`, { token });
    return body.reason !== null && body.reason !== before && body.status === 'pending_verification' ? body : undefined;
  }, 10_000, 50);

/** Where the edge routes a custom hostname: the platform-wide hash, and the agent's own set the Check proves membership in. */
const projectedRoute = async (control: TestControl, slug: string, hostname: string) => ({
  host: await control.redis.hget(edgeKeyNames.domainHosts, hostname),
  member: (await control.redis.sismember(edgeKeyNames.domains(slug), hostname)) === 1,
});
/** As the worker projects a domain once its certificate is stored. */
const project = (control: TestControl, slug: string, hostname: string) => new EdgeProjection(control.redis, control.config.redisKeyPrefix).putDomain(slug, hostname);

/** Custom domains (issue 34) on real Postgres: claiming, the rules a hostname must pass, the plan's limit, who may. */
describe('custom domains: the API', () => {
  let control: TestControl;

  before(async () => {
    control = await startControl();
  });
  after(async () => control?.close());

  const add = (token: string, agentId: string, hostname: string) => addDomain(control, token, agentId, hostname);

  it('claims a hostname: 201, pending verification, with the TXT record to create; the worker looks at it at once', async () => {
    const { token, agent } = await accountWithAgent(control);
    const hostname = unique('app');
    const created = await add(token, agent.id, `${hostname.toUpperCase()}.`);
    expectStatus(created, 201);
    assert.deepEqual(Object.keys(created.body).sort(), ['certificate', 'created_at', 'hostname', 'id', 'reason', 'status', 'updated_at', 'verification']);
    assert.match(created.body.id, /^dom_[0-9A-Za-z]{20}$/);
    assert.equal(created.body.hostname, hostname, 'lower case, without the trailing dot');
    assert.equal(created.body.status, 'pending_verification');
    assert.equal(created.body.verification.type, 'TXT');
    assert.equal(created.body.verification.name, `_agent-platform.${hostname}`);
    assert.match(created.body.verification.value, /^[0-9A-Za-z]{32}$/);
    assert.equal(created.body.reason, null);
    assert.equal(created.body.certificate, null);

    // No timer runs in a test control: only the wake-up the create sent moves the domain on.
    const looked = await afterWorkerLooked(control, token, agent.id, created.body.id);
    assert.equal(looked.reason, `the DNS lookup of _agent-platform.${hostname} failed: ECONNREFUSED`);
    assert.deepEqual(looked.verification, created.body.verification);
    const [event] = await control.db('audit_events').where({ action: 'domain.create', target_id: created.body.id });
    assert.equal(event.agent_id, agent.id);
    assert.deepEqual(event.details, { hostname });
  });

  it('gives a hostname to one agent in the whole platform: another account, or another agent, gets 409 DOMAIN_TAKEN', async () => {
    const first = await accountWithAgent(control);
    const second = await accountWithAgent(control);
    const hostname = unique('taken');
    expectStatus(await add(first.token, first.agent.id, hostname), 201);
    const refused = await add(second.token, second.agent.id, hostname.toUpperCase());
    expectError(refused, 409, 'DOMAIN_TAKEN');
    assert.match(refused.body.message, new RegExp(hostname.replace(/\./g, '\\.')));
    assert.equal(await control.db('agent_domains').where({ hostname }).count('* as n').first().then((r) => Number(r!.n)), 1);
  });

  it('lets one of two simultaneous claims of a hostname win, the other 409', async () => {
    const first = await accountWithAgent(control);
    const second = await accountWithAgent(control);
    const hostname = unique('race');
    const answers = await Promise.all([add(first.token, first.agent.id, hostname), add(second.token, second.agent.id, hostname)]);
    assert.deepEqual(answers.map((a) => a.status).sort(), [201, 409]);
  });

  it('refuses the agent domain and names under it (422, value_error.hostname.reserved)', async () => {
    const { token, agent } = await accountWithAgent(control);
    const agentDomain = control.config.agentUrl.domain;
    for (const hostname of [agentDomain, `${agent.slug ?? 'x'}.${agentDomain}`, `a.b.${agentDomain}.`]) {
      const refused = await add(token, agent.id, hostname);
      expectError(refused, 422, 'VALIDATION_ERROR', ['body', 'hostname']);
      assert.equal(refused.body.details.errors[0].type, 'value_error.hostname.reserved', hostname);
      assert.match(refused.body.details.errors[0].msg, /agent domain/);
    }
  });

  it('refuses what is not a DNS name, saying which rule it breaks (422)', async () => {
    const { token, agent } = await accountWithAgent(control);
    const cases: [string, RegExp][] = [
      ['localhost', /at least two labels/],
      ['*.example.com', /wildcard/],
      ['192.0.2.1', /not an IP address/],
      ['[2001:db8::1]', /not an IP address/],
      ['a..example.com', /empty label/],
      ['-bad.example.com', /RFC 1123/],
      ['under_score.example.com', /RFC 1123/],
      [`${'a'.repeat(64)}.example.com`, /longer than 63/],
      [`${'abcdefghi.'.repeat(25)}example.com`, /longer than 253/],
      ['example.123', /not a number/],
    ];
    for (const [hostname, rule] of cases) {
      const refused = await add(token, agent.id, hostname);
      expectError(refused, 422, 'VALIDATION_ERROR', ['body', 'hostname']);
      assert.match(refused.body.details.errors[0].msg, rule, hostname);
    }
    expectError(await control.request('POST', `/agents/${agent.id}/domains`, { token, body: {} }), 422, 'VALIDATION_ERROR', ['body', 'hostname']);
    assert.deepEqual((await control.request('GET', `/agents/${agent.id}/domains`, { token })).body.domains, []);
  });

  it("holds the free plan to one custom domain across the account's agents (403 QUOTA_EXCEEDED), and frees the place on delete", async () => {
    const { token, agent } = await accountWithAgent(control);
    const other = await createAgent(control, token, { name: 'second' });
    const first = await add(token, agent.id, unique('one'));
    expectStatus(first, 201);
    const refused = await add(token, other.id, unique('two'));
    expectError(refused, 403, 'QUOTA_EXCEEDED');
    assert.deepEqual(refused.body.details, { limit: 'max_custom_domains', value: 1, requested: 2 });
    expectStatus(await control.request('DELETE', `/agents/${agent.id}/domains/${first.body.id}`, { token }), 204);
    expectStatus(await add(token, other.id, unique('two')), 201);
  });

  it('lists, gets and deletes; the edge forgets the hostname before the 204, and the domain is 404 after', async () => {
    const { token, agent, slug } = await accountWithAgent(control);
    const created = await afterWorkerLooked(control, token, agent.id, (await add(token, agent.id, unique('list'))).body.id);
    const listed = await control.request('GET', `/agents/${agent.id}/domains`, { token });
    expectStatus(listed, 200);
    assert.deepEqual(listed.body, { domains: [created] });
    const got = await control.request('GET', `/agents/${agent.id}/domains/${created.id}`, { token });
    assert.deepEqual(got.body, created);

    await project(control, slug, created.hostname);
    assert.deepEqual(await projectedRoute(control, slug, created.hostname), { host: slug, member: true });
    expectStatus(await control.request('DELETE', `/agents/${agent.id}/domains/${created.id}`, { token }), 204);
    assert.deepEqual(await projectedRoute(control, slug, created.hostname), { host: null, member: false }, 'routing stopped before the 204');
    expectError(await control.request('GET', `/agents/${agent.id}/domains/${created.id}`, { token }), 404, 'NOT_FOUND');
    expectError(await control.request('DELETE', `/agents/${agent.id}/domains/${created.id}`, { token }), 404, 'NOT_FOUND');
    const [event] = await control.db('audit_events').where({ action: 'domain.delete', target_id: created.id });
    assert.equal(event.agent_id, agent.id);
  });

  it("hides one account's domains from another (404), and an agent's from another agent's path", async () => {
    const owner = await accountWithAgent(control);
    const stranger = await accountWithAgent(control);
    const created = (await add(owner.token, owner.agent.id, unique('mine'))).body;
    for (const [method, path] of [['GET', `/agents/${owner.agent.id}/domains`], ['GET', `/agents/${owner.agent.id}/domains/${created.id}`], ['DELETE', `/agents/${owner.agent.id}/domains/${created.id}`], ['POST', `/agents/${owner.agent.id}/domains/${created.id}/verify`]] as const) {
      expectError(await control.request(method, path, { token: stranger.token }), 404, 'NOT_FOUND');
    }
    const sibling = await createAgent(control, owner.token, { name: 'sibling' });
    expectError(await control.request('GET', `/agents/${sibling.id}/domains/${created.id}`, { token: owner.token }), 404, 'NOT_FOUND');
  });

  it('lets a viewer read but not add, delete or verify (403 AUTHORISATION_DENIED); a member may add', async () => {
    const { token, user, agent } = await accountWithAgent(control);
    const { token: viewer } = await signUpMember(control, user.account_id, 'viewer');
    expectError(await add(viewer, agent.id, unique('viewer')), 403, 'AUTHORISATION_DENIED');
    const created = (await add(token, agent.id, unique('owned'))).body;
    expectStatus(await control.request('GET', `/agents/${agent.id}/domains`, { token: viewer }), 200);
    expectError(await control.request('DELETE', `/agents/${agent.id}/domains/${created.id}`, { token: viewer }), 403, 'AUTHORISATION_DENIED');
    expectError(await control.request('POST', `/agents/${agent.id}/domains/${created.id}/verify`, { token: viewer }), 403, 'AUTHORISATION_DENIED');
    expectStatus(await control.request('DELETE', `/agents/${agent.id}/domains/${created.id}`, { token }), 204);
    const { token: member } = await signUpMember(control, user.account_id, 'member');
    expectStatus(await add(member, agent.id, unique('member')), 201);
  });

  it('verify asks for a check now (202): a failed domain starts over, and the worker looks at it at once', async () => {
    const { token, agent } = await accountWithAgent(control);
    const created = (await add(token, agent.id, unique('verify'))).body;
    await afterWorkerLooked(control, token, agent.id, created.id);
    await control.db('agent_domains').where({ id: created.id }).update({ status: 'failed', reason: 'no TXT record', next_attempt_at: null, attempts: 5 });
    const asked = await control.request('POST', `/agents/${agent.id}/domains/${created.id}/verify`, { token });
    expectStatus(asked, 202);
    assert.equal(asked.body.status, 'pending_verification');
    // Only the wake-up the request sent runs the worker (no timer runs in a test control).
    const looked = await afterWorkerLooked(control, token, agent.id, created.id, 'no TXT record');
    assert.match(looked.reason, /_agent-platform\..* failed: ECONNREFUSED/);
    const row = await control.db('agent_domains').where({ id: created.id }).first();
    assert.equal(row.attempts, 1, 'the count started over: one try since the request');
  });

  it('shows an issued certificate by serial and dates, never its chain or key', async () => {
    const { token, agent } = await accountWithAgent(control);
    const created = (await add(token, agent.id, unique('cert'))).body;
    await afterWorkerLooked(control, token, agent.id, created.id);
    const now = control.clock.now();
    const day = 86_400_000;
    await control.db('agent_domains').where({ id: created.id }).update({
      status: 'active',
      certificate_pem: '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n',
      private_key_sealed: 'v2.key.sealed',
      certificate_serial: '03a1f2',
      certificate_not_before: now,
      certificate_not_after: new Date(now.getTime() + 90 * day),
      renew_after: new Date(now.getTime() + 60 * day),
    });
    const got = await control.request('GET', `/agents/${agent.id}/domains/${created.id}`, { token });
    expectStatus(got, 200);
    assert.deepEqual(got.body.certificate, {
      serial: '03a1f2',
      not_before: now.toISOString(),
      not_after: new Date(now.getTime() + 90 * day).toISOString(),
      renew_after: new Date(now.getTime() + 60 * day).toISOString(),
    });
    const listed = await control.request('GET', `/agents/${agent.id}/domains`, { token });
    for (const text of [JSON.stringify(got.body), JSON.stringify(listed.body)]) {
      assert.ok(!text.includes('BEGIN'), 'no PEM in an answer');
      assert.ok(!text.includes('v2.key.sealed'), 'no sealed key in an answer');
    }
  });

  it("goes with its agent: deleting the agent deletes its domains and frees the hostname", async () => {
    const { token, agent } = await accountWithAgent(control);
    const hostname = unique('cascade');
    expectStatus(await add(token, agent.id, hostname), 201);
    expectStatus(await control.request('DELETE', `/agents/${agent.id}`, { token }), 204);
    assert.equal(await control.db('agent_domains').where({ hostname }).first(), undefined);
    const other = await accountWithAgent(control);
    expectStatus(await add(other.token, other.agent.id, hostname), 201);
  });

  it('stops routing the hostnames of a deleted agent before the 204', async () => {
    const { token, agent, slug } = await accountWithAgent(control);
    const hostname = unique('agent-gone');
    expectStatus(await add(token, agent.id, hostname), 201);
    await project(control, slug, hostname);
    expectStatus(await control.request('DELETE', `/agents/${agent.id}`, { token }), 204);
    assert.deepEqual(await projectedRoute(control, slug, hostname), { host: null, member: false });
  });

  it('stops routing the hostnames of a deleted account before the 204', async () => {
    const { token, user, agent, slug } = await accountWithAgent(control);
    const hostname = unique('account-gone');
    expectStatus(await add(token, agent.id, hostname), 201);
    await project(control, slug, hostname);
    expectStatus(await control.request('DELETE', '/account', { token, body: { confirm: user.account_id } }), 204);
    assert.deepEqual(await projectedRoute(control, slug, hostname), { host: null, member: false });
  });
});

/**
 * A delete the edge cannot take: Redis stalled (SIGSTOP, as test/control-stalls.test.ts
 * stalls it), so the suite runs a Redis of its own.
 */
describe('custom domains: the API with Redis stalled', function () {
  this.timeout(60_000);
  let workDir: string;
  let redis: RunningService | undefined;
  let control: TestControl;

  before(async () => {
    workDir = mkdtempSync(join(tmpdir(), 'platform-domains-'));
    redis = await startRedis({ dataDir: workDir, port: await freePort(), persistent: false });
    control = await startControl({}, { services: { templateDatabaseUrl: process.env.TEST_TEMPLATE_DATABASE_URL!, redisUrl: redis.url } });
  });
  after(async () => {
    await control?.close().catch(() => undefined);
    await redis?.stop().catch(() => undefined);
    if (workDir) rmSync(workDir, { recursive: true, force: true });
  });

  it('keeps the domain when the edge cannot forget it: the delete fails whole (503 EDGE_UNAVAILABLE) and can be retried', async () => {
    const { token, agent, slug } = await accountWithAgent(control);
    const created = (await addDomain(control, token, agent.id, unique('keep'))).body;
    await project(control, slug, created.hostname);
    const refused = await whileFrozen(redis!.pid, () => control.request('DELETE', `/agents/${agent.id}/domains/${created.id}`, { token }));
    expectError(refused, 503, 'EDGE_UNAVAILABLE');
    assert.match(refused.headers.get('retry-after') ?? '', /^[1-9]\d*$/);
    expectStatus(await control.request('GET', `/agents/${agent.id}/domains/${created.id}`, { token }), 200);
    assert.equal(await control.db('audit_events').where({ action: 'domain.delete', target_id: created.id }).first(), undefined);
    // Once Redis answers again (the client reconnects by itself), the same delete goes through.
    await waitFor('the delete to go through once Redis answers', async () => {
      const retried = await control.request('DELETE', `/agents/${agent.id}/domains/${created.id}`, { token });
      return retried.status === 204 ? true : undefined;
    }, 30_000);
    assert.deepEqual(await projectedRoute(control, slug, created.hostname), { host: null, member: false });
  });
});
