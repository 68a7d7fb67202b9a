import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { AdminService } from '../control/services/admin-service.js';
import { startControl, type TestControl } from './support/control-harness.js';
import { createAgent, expectError, expectStatus, signUpMember } from './support/control-api.js';
import { denialOf, startTestAuthz, type TestAuthz } from './support/edge-authz.js';
import type { InMemoryDriver } from './support/in-memory-driver.js';
import { waitFor } from './support/wait.js';

const FREE_LIMITS = {
  max_agents: 10,
  max_replicas: 3,
  max_vcpu: 3,
  max_memory_mb: 3072,
  max_replica_cpu: 1,
  max_replica_memory_mb: 1024,
  max_agent_rpm: 300,
  max_custom_domains: 1,
};

const PRO_LIMITS = {
  max_agents: 100,
  max_replicas: 50,
  max_vcpu: 50,
  max_memory_mb: 102_400,
  max_replica_cpu: 4,
  max_replica_memory_mb: 8192,
  max_agent_rpm: 3000,
  max_custom_domains: 20,
};

describe('control API: plan quotas and account usage', () => {
  let control: TestControl;

  before(async () => {
    control = await startControl();
  });
  after(async () => control?.close());

  const post = (token: string, body: Record<string, unknown>) => control.request('POST', '/agents', { token, body: { name: 'quota', ...body } });
  const countAgents = async (accountId: string) => Number((await control.db('agents').where({ account_id: accountId }).count({ n: '*' }))[0]!.n);

  function expectQuota(response: Awaited<ReturnType<typeof post>>, limit: string, value: number, requested: number) {
    expectError(response, 403, 'QUOTA_EXCEEDED');
    assert.deepEqual(response.body.details, { limit, value, requested });
  }

  async function signUpOn(plan: 'free' | 'pro', exempt = false) {
    const user = await control.signUp();
    await control.db('accounts').where({ id: user.user.account_id }).update({ plan, exempt });
    return user;
  }

  describe('free plan', () => {
    it('allows exactly 10 agents; the 11th is 403 QUOTA_EXCEEDED naming max_agents', async () => {
      const { token, user } = await control.signUp();
      for (let i = 1; i <= 10; i += 1) expectStatus(await post(token, { name: `agent ${i}` }), 201);
      expectQuota(await post(token, { name: 'eleventh' }), 'max_agents', 10, 11);
      assert.equal(await countAgents(user.account_id), 10);
    });

    it('makes room again when an agent is deleted', async () => {
      const { token } = await control.signUp();
      const agents = [];
      for (let i = 1; i <= 10; i += 1) agents.push(await createAgent(control, token, { name: `agent ${i}` }));
      expectQuota(await post(token, {}), 'max_agents', 10, 11);
      assert.equal((await control.request('DELETE', `/agents/${agents[0].id}`, { token })).status, 204);
      expectStatus(await post(token, {}), 201);
    });

    it('creates exactly 3 of 20 parallel creates when 3 agents are left, and refuses 17', async () => {
      const { token, user } = await control.signUp();
      for (let i = 1; i <= 7; i += 1) await createAgent(control, token, { name: `existing ${i}` });
      const responses = await Promise.all(Array.from({ length: 20 }, (_, i) => post(token, { name: `racer ${i}` })));
      const created = responses.filter((r) => r.status === 201);
      const refused = responses.filter((r) => r.status === 403);
      assert.equal(created.length, 3, responses.map((r) => r.status).join(','));
      assert.equal(refused.length, 17, responses.map((r) => r.status).join(','));
      for (const response of refused) {
        assert.equal(response.body.code, 'QUOTA_EXCEEDED');
        assert.equal(response.body.details.limit, 'max_agents');
      }
      assert.equal(await countAgents(user.account_id), 10);
    });

    it('holds max_replicas under parallel creates: 6 agents of 1 replica, exactly 3 created', async () => {
      const { token, user } = await control.signUp();
      const responses = await Promise.all(Array.from({ length: 6 }, (_, i) => post(token, { name: `replica ${i}`, deploy: { replicas: 1 } })));
      assert.deepEqual(responses.map((r) => r.status).sort(), [201, 201, 201, 403, 403, 403]);
      for (const response of responses.filter((r) => r.status === 403)) assert.equal(response.body.details.limit, 'max_replicas');
      const rows = await control.db('agents').where({ account_id: user.account_id }).sum({ replicas: 'desired_replicas' });
      assert.equal(Number(rows[0]!.replicas), 3);
    });

    it('allows 3 replicas in total; a 4th is 403 naming max_replicas', async () => {
      const { token } = await control.signUp();
      expectQuota(await post(token, { deploy: { replicas: 4 } }), 'max_replicas', 3, 4);
      expectStatus(await post(token, { deploy: { replicas: 3 } }), 201);
      expectQuota(await post(token, { deploy: { replicas: 1 } }), 'max_replicas', 3, 4);
      // An agent that asks for no replicas still fits.
      expectStatus(await post(token, {}), 201);
      expectStatus(await post(token, { deploy: { replicas: 0 } }), 201);
    });

    it('counts replicas across agents', async () => {
      const { token } = await control.signUp();
      expectStatus(await post(token, { deploy: { replicas: 2 } }), 201);
      expectStatus(await post(token, { deploy: { replicas: 1 } }), 201);
      expectQuota(await post(token, { deploy: { replicas: 1 } }), 'max_replicas', 3, 4);
    });

    it('allows 1 vCPU per replica; 2 is 403 naming max_replica_cpu', async () => {
      const { token } = await control.signUp();
      expectQuota(await post(token, { deploy: { resources: { cpu: 2 } } }), 'max_replica_cpu', 1, 2);
      expectQuota(await post(token, { deploy: { resources: { cpu: 1.5 } } }), 'max_replica_cpu', 1, 1.5);
      expectStatus(await post(token, { deploy: { resources: { cpu: 1 } } }), 201);
    });

    it('allows 1024 MB per replica; 2048 is 403 naming max_replica_memory_mb', async () => {
      const { token } = await control.signUp();
      expectQuota(await post(token, { deploy: { resources: { memory_mb: 2048 } } }), 'max_replica_memory_mb', 1024, 2048);
      expectQuota(await post(token, { deploy: { resources: { memory_mb: 1025 } } }), 'max_replica_memory_mb', 1024, 1025);
      expectStatus(await post(token, { deploy: { resources: { memory_mb: 1024 } } }), 201);
    });

    it('passes exactly at every replica limit at once: 3 replicas of 1 vCPU and 1024 MB', async () => {
      const { token } = await control.signUp();
      expectStatus(await post(token, { deploy: { replicas: 3, resources: { cpu: 1, memory_mb: 1024 } } }), 201);
    });

    it('leaves no agent behind when a create is refused', async () => {
      const { token, user } = await control.signUp();
      expectQuota(await post(token, { deploy: { replicas: 4 } }), 'max_replicas', 3, 4);
      assert.equal(await countAgents(user.account_id), 0);
      assert.equal((await control.request('GET', '/agents', { token })).body.total, 0);
    });

    it('counts the agents of every user of the account together', async () => {
      const owner = await control.signUp();
      const member = await signUpMember(control, owner.user.account_id, 'member');
      for (let i = 1; i <= 5; i += 1) await createAgent(control, owner.token, { name: `owner ${i}` });
      for (let i = 1; i <= 5; i += 1) await createAgent(control, member.token, { name: `member ${i}` });
      expectQuota(await post(member.token, {}), 'max_agents', 10, 11);
    });

    it('holds replica quotas on redeploy and scale too', async () => {
      const { token } = await control.signUp();
      const agent = await createAgent(control, token, { deploy: { replicas: 3 } });
      const scaled = await control.request('POST', `/agents/${agent.id}/scale`, { token, body: { direction: 'up', count: 1 } });
      expectQuota(scaled, 'max_replicas', 3, 4);
      const redeployed = await control.request('POST', `/agents/${agent.id}/deploy`, { token, body: { replicas: 4 } });
      expectQuota(redeployed, 'max_replicas', 3, 4);
      const bigger = await control.request('POST', `/agents/${agent.id}/deploy`, { token, body: { resources: { cpu: 2 } } });
      expectQuota(bigger, 'max_replica_cpu', 1, 2);
      const fetched = await control.request('GET', `/agents/${agent.id}`, { token });
      assert.equal(fetched.body.deploy.replicas, 3);
      assert.equal(fetched.body.version, agent.version);
    });
  });

  describe('warm-parked replicas (issue 40)', () => {
    it("count toward the plan's memory until their warm period ends, and not toward its replicas", async () => {
      const { token } = await signUpOn('free');
      const parked = await post(token, { deploy: { replicas: 1, auto_scale: true, min_replicas: 0, max_replicas: 1, resources: { memory_mb: 1024 } } });
      expectStatus(parked, 201);
      // Parked warm, as the idle parker parks it where the driver freezes its replica (podman); this
      // suite's driver cannot, so the parker would record no warm period: the row says it here.
      assert.equal(await control.control.services.platformScaling.park(parked.body.id, 1), true);
      await control.db('agents').where({ id: parked.body.id }).update({ warm_parked_until: new Date(Date.now() + 600_000) });
      const usage = (await control.request('GET', '/account/usage', { token })).body.usage;
      assert.deepEqual(usage, { agents: 1, replicas: 0, vcpu: 0, memory_mb: 1024, warm_parked_replicas: 1 });

      // 1024 MB frozen + 2 × 1024 MB = 3072 = max_memory_mb; the replicas are 2 of 3.
      expectStatus(await post(token, { name: 'two', deploy: { replicas: 2, resources: { memory_mb: 1024 } } }), 201);
      expectQuota(await post(token, { name: 'third', deploy: { replicas: 1, resources: { memory_mb: 64 } } }), 'max_memory_mb', 3072, 3136);

      // Its warm period over (the driver stops it then): its memory is free again.
      await control.db('agents').where({ id: parked.body.id }).update({ warm_parked_until: new Date(Date.now() - 1_000) });
      expectStatus(await post(token, { name: 'third', deploy: { replicas: 1, resources: { memory_mb: 64 } } }), 201);
    });
  });

  describe('pro plan and exempt accounts', () => {
    it('gives the pro plan its own limits: more than 10 agents, 4 vCPU and 8192 MB per replica', async () => {
      const { token } = await signUpOn('pro');
      for (let i = 1; i <= 11; i += 1) expectStatus(await post(token, { name: `pro ${i}` }), 201);
      expectStatus(await post(token, { deploy: { replicas: 1, resources: { cpu: 4, memory_mb: 8192 } } }), 201);
      expectQuota(await post(token, { deploy: { replicas: 1, resources: { cpu: 5 } } }), 'max_replica_cpu', 4, 5);
      expectQuota(await post(token, { deploy: { replicas: 1, resources: { memory_mb: 8193 } } }), 'max_replica_memory_mb', 8192, 8193);
    });

    it('counts vCPU and memory over the pro plan\'s replicas, exactly at the limit passing', async () => {
      const { token } = await signUpOn('pro');
      // 20 × 2.5 vCPU = 50 = max_vcpu.
      expectStatus(await post(token, { deploy: { replicas: 20, max_replicas: 20, resources: { cpu: 2.5, memory_mb: 1024 } } }), 201);
      expectQuota(await post(token, { deploy: { replicas: 1, resources: { cpu: 0.5, memory_mb: 64 } } }), 'max_vcpu', 50, 50.5);

      const other = await signUpOn('pro');
      // 25 × 4096 MB = 102,400 = max_memory_mb.
      expectStatus(await post(other.token, { deploy: { replicas: 25, max_replicas: 25, resources: { cpu: 1, memory_mb: 4096 } } }), 201);
      expectQuota(await post(other.token, { deploy: { replicas: 1, resources: { cpu: 1, memory_mb: 64 } } }), 'max_memory_mb', 102_400, 102_464);
    });

    it('lets an exempt account pass every quota', async () => {
      const { token } = await signUpOn('free', true);
      for (let i = 1; i <= 11; i += 1) expectStatus(await post(token, { name: `exempt ${i}` }), 201);
      expectStatus(await post(token, { deploy: { replicas: 4, resources: { cpu: 2, memory_mb: 2048 } } }), 201);
    });
  });

  describe('scale and redeploy at the edge of each limit', () => {
    const scale = (token: string, id: string, direction: 'up' | 'down', count: number) =>
      control.request('POST', `/agents/${id}/scale`, { token, body: { direction, count } });
    const redeploy = (token: string, id: string, body: Record<string, unknown>) =>
      control.request('POST', `/agents/${id}/deploy`, { token, body });
    const desiredOf = async (accountId: string) =>
      Number((await control.db('agents').where({ account_id: accountId }).sum({ n: 'desired_replicas' }))[0]!.n);

    it('scales up exactly to max_replicas and refuses one more', async () => {
      const { token } = await control.signUp();
      const agent = await createAgent(control, token, { deploy: { replicas: 1 } });
      expectStatus(await scale(token, agent.id, 'up', 2), 200);
      expectQuota(await scale(token, agent.id, 'up', 1), 'max_replicas', 3, 4);
      // Down is never held by a quota.
      expectStatus(await scale(token, agent.id, 'down', 3), 200);
    });

    it('grants exactly 2 of 6 parallel scale-ups by one when 2 replicas are left', async () => {
      const { token, user } = await control.signUp();
      const agent = await createAgent(control, token, { deploy: { replicas: 1 } });
      const responses = await Promise.all(Array.from({ length: 6 }, () => scale(token, agent.id, 'up', 1)));
      assert.deepEqual(responses.map((r) => r.status).sort(), [200, 200, 403, 403, 403, 403]);
      for (const response of responses.filter((r) => r.status === 403)) {
        assert.deepEqual(response.body.details, { limit: 'max_replicas', value: 3, requested: 4 });
      }
      assert.equal(await desiredOf(user.account_id), 3);
    });

    it('grants exactly one of two parallel redeploys that together pass max_replicas', async () => {
      const { token, user } = await control.signUp();
      const first = await createAgent(control, token, { name: 'first', deploy: { replicas: 1 } });
      const second = await createAgent(control, token, { name: 'second', deploy: { replicas: 1 } });
      const responses = await Promise.all([redeploy(token, first.id, { replicas: 2 }), redeploy(token, second.id, { replicas: 2 })]);
      assert.deepEqual(responses.map((r) => r.status).sort(), [202, 403]);
      assert.equal(responses.find((r) => r.status === 403)!.body.details.limit, 'max_replicas');
      assert.equal(await desiredOf(user.account_id), 3);
    });

    it('holds max_vcpu on scale: exactly 50 vCPU passes, 52 fails (pro)', async () => {
      const { token } = await signUpOn('pro');
      const agent = await createAgent(control, token, { deploy: { replicas: 24, max_replicas: 30, resources: { cpu: 2, memory_mb: 256 } } });
      expectStatus(await scale(token, agent.id, 'up', 1), 200);
      expectQuota(await scale(token, agent.id, 'up', 1), 'max_vcpu', 50, 52);
    });

    it('holds max_memory_mb on redeploy: exactly 102,400 MB passes, one more replica fails (pro)', async () => {
      const { token } = await signUpOn('pro');
      const agent = await createAgent(control, token, { deploy: { replicas: 1, max_replicas: 30, resources: { cpu: 1, memory_mb: 4096 } } });
      expectStatus(await redeploy(token, agent.id, { replicas: 25 }), 202);
      expectQuota(await redeploy(token, agent.id, { replicas: 26 }), 'max_memory_mb', 102_400, 106_496);
      expectQuota(await scale(token, agent.id, 'up', 1), 'max_memory_mb', 102_400, 106_496);
    });

    it('holds max_replica_memory_mb on redeploy: 1024 MB passes, 1025 fails', async () => {
      const { token } = await control.signUp();
      const agent = await createAgent(control, token, { deploy: { replicas: 1 } });
      expectStatus(await redeploy(token, agent.id, { resources: { memory_mb: 1024 } }), 202);
      expectQuota(await redeploy(token, agent.id, { resources: { memory_mb: 1025 } }), 'max_replica_memory_mb', 1024, 1025);
    });

    it('lets an exempt account scale past every quota', async () => {
      const { token } = await signUpOn('free', true);
      const agent = await createAgent(control, token, { deploy: { replicas: 3 } });
      expectStatus(await scale(token, agent.id, 'up', 2), 200);
    });

    it('holds the auto-scaler to the quota too, also racing manual scale-ups', async () => {
      const { token, user } = await control.signUp();
      const agent = await createAgent(control, token, { deploy: { replicas: 1, auto_scale: true, min_replicas: 1, max_replicas: 5 } });
      const scaling = control.control.services.platformScaling;
      const [scaled, ...manual] = await Promise.all([
        scaling.autoscale(agent.id, 1, 5),
        scale(token, agent.id, 'up', 1),
        scale(token, agent.id, 'up', 1),
        scale(token, agent.id, 'up', 1),
      ]);
      for (const response of manual) assert.ok([200, 403].includes(response.status), JSON.stringify(response.body));
      assert.equal(await desiredOf(user.account_id), 3, `never past max_replicas: ${JSON.stringify(scaled)}`);
      // Whichever came first, the account is now full: the scaler can add nothing.
      await assert.rejects(scaling.autoscale(agent.id, 3, 4), (error: any) => error.code === 'QUOTA_EXCEEDED' && error.details.limit === 'max_replicas');
      assert.equal(await desiredOf(user.account_id), 3);
    });

    it('lets the auto-scaler go as far as the quota allows, and names the limit that held it', async () => {
      const { token, user } = await control.signUp();
      const agent = await createAgent(control, token, { deploy: { replicas: 1, auto_scale: true, min_replicas: 1, max_replicas: 5 } });
      const outcome = await control.control.services.platformScaling.autoscale(agent.id, 1, 5);
      assert.deepEqual(outcome, { changed: true, previous: 1, current: 3, limitedBy: { limit: 'max_replicas', value: 3, requested: 5 } });
      assert.equal(await desiredOf(user.account_id), 3);
    });

    it('leaves alone an agent that is not auto-scaled or no longer at the count the scaler saw', async () => {
      const { token, user } = await control.signUp();
      const fixed = await createAgent(control, token, { deploy: { replicas: 1 } });
      assert.deepEqual(await control.control.services.platformScaling.autoscale(fixed.id, 1, 2), { changed: false });
      const scaled = await createAgent(control, token, { deploy: { replicas: 1, auto_scale: true, max_replicas: 3 } });
      assert.deepEqual(await control.control.services.platformScaling.autoscale(scaled.id, 2, 1), { changed: false });
      assert.equal(await desiredOf(user.account_id), 2);
    });

    it('scales an auto-scaled agent by hand only within min_replicas..max_replicas', async () => {
      const { token } = await control.signUp();
      const agent = await createAgent(control, token, { deploy: { replicas: 2, auto_scale: true, min_replicas: 1, max_replicas: 3 } });
      expectError(await scale(token, agent.id, 'down', 2), 422, 'VALIDATION_ERROR', ['body', 'count']);
      expectError(await scale(token, agent.id, 'up', 2), 422, 'VALIDATION_ERROR', ['body', 'count']);
      const up = await scale(token, agent.id, 'up', 1);
      expectStatus(up, 200);
      assert.equal(up.body.current_replicas, 3);
      expectStatus(await scale(token, agent.id, 'down', 2), 200);
    });
  });

  describe('max_agent_rpm at the edge (real authz)', () => {
    let edge: TestAuthz;
    before(async () => {
      // Redis as long as it takes (authz's most): with the 100 ms of the other suites a busy machine's late reply
      // fails a Check closed (503), though its count may have been taken, and "the first 300 pass" would not hold.
      edge = await startTestAuthz({ redis: control.redis, clock: control.clock, agentDomain: control.config.agentUrl.domain, redisTimeoutMs: 5_000 });
    });
    after(async () => edge?.close());

    it('limits a free agent at 300 requests a minute; moving the account to pro lifts it to 3,000 at once', async () => {
      // A minute of its own, 10 minutes on, held still: authz reads the window from this manual clock, so however slow
      // the machine, every Check below falls in one fresh window (and one the edge's real-time figures never touched).
      control.clock.set(new Date(Math.ceil((Date.now() + 600_000) / 60_000) * 60_000));
      const { token, user } = await control.signUp();
      // No caller limit in the way: the per-caller limit is the agent's rate_limit_rpm.
      const agent = await createAgent(control, token, { access: 'public', rate_limit_rpm: 100_000 });
      const host = new URL(agent.url).host;
      const slug = host.split('.')[0]!;
      // As the runner does once a replica runs; the Check never connects to it.
      await control.redis.sadd(`edge:upstreams:{${slug}}`, '127.0.0.1:9');

      // Sent one at a time, so authz's admission never sheds one; a denial is shown with its status, not as a bare count.
      const refused: string[] = [];
      for (let i = 0; i < 300; i += 1) {
        const response = await edge.client.check({ host });
        if (response.http_response !== 'ok_response') refused.push(`#${i + 1}: ${denialOf(response).httpStatus}`);
      }
      assert.deepEqual(refused, [], 'the first 300 of the minute pass');
      const limited = denialOf(await edge.client.check({ host }));
      assert.equal(limited.httpStatus, 'TooManyRequests');
      assert.ok(Number(limited.headers['retry-after']) >= 1);

      await new AdminService(control.db, control.clock, control.control.services.edge).setPlan(user.account_id, 'pro');
      assert.equal(await control.redis.hget(`edge:agent:{${slug}}`, 'agent_rpm'), '3000');
      // Same window, its counter past 300: pro's limit lets it through.
      assert.equal((await edge.client.check({ host })).http_response, 'ok_response');

      await new AdminService(control.db, control.clock, control.control.services.edge).setPlan(user.account_id, 'free');
      assert.equal(denialOf(await edge.client.check({ host })).httpStatus, 'TooManyRequests');
    });
  });

  describe('npm run admin -- account plan', () => {
    const admin = (...args: string[]) =>
      promisify(execFile)(process.execPath, ['--import', 'tsx', resolve(import.meta.dirname, '../control/admin.ts'), ...args], {
        env: { ...process.env, DATABASE_URL: control.config.databaseUrl, REDIS_URL: control.config.redisUrl, REDIS_KEY_PREFIX: control.config.redisKeyPrefix },
      });

    it('moves an account by owner email and re-projects its agents\' per-agent limit at once', async () => {
      const { token, user } = await control.signUp();
      const agent = await createAgent(control, token, { access: 'public' });
      const slug = new URL(agent.url).hostname.split('.')[0]!;
      const { stdout } = await admin('account', 'plan', user.email, 'pro');
      assert.match(stdout, /is now pro/);
      assert.equal(await control.redis.hget(`edge:agent:{${slug}}`, 'agent_rpm'), '3000');
      assert.equal((await control.request('GET', '/account/usage', { token })).body.plan, 'pro');
      await assert.rejects(admin('account', 'plan', user.email, 'gold'), /plan must be free or pro/);
      assert.equal(await control.redis.hget(`edge:agent:{${slug}}`, 'agent_rpm'), '3000');
    });
  });

  describe('GET /account/usage', () => {
    it('reports plan, exemption, the eight limits, what runs and the period', async () => {
      const { token } = await control.signUp();
      const response = await control.request('GET', '/account/usage', { token });
      expectStatus(response, 200);
      const usage = response.body;
      assert.deepEqual(Object.keys(usage).sort(), ['exempt', 'limits', 'period', 'plan', 'usage']);
      assert.equal(usage.plan, 'free');
      assert.equal(usage.exempt, false);
      assert.deepEqual(usage.limits, FREE_LIMITS);
      assert.deepEqual(usage.usage, { agents: 0, replicas: 0, vcpu: 0, memory_mb: 0, warm_parked_replicas: 0 });
      assert.deepEqual(Object.keys(usage.period).sort(), ['memory_gb_hours', 'model_usage', 'replica_hours', 'requests', 'start', 'vcpu_hours']);
      const now = control.clock.now();
      assert.equal(usage.period.start, new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)).toISOString());
      for (const figure of ['replica_hours', 'vcpu_hours', 'memory_gb_hours', 'requests']) {
        assert.equal(typeof usage.period[figure], 'number', figure);
        assert.ok(usage.period[figure] >= 0, figure);
      }
    });

    it('counts agents and the replicas that run now', async () => {
      const { token } = await control.signUp();
      await createAgent(control, token, { name: 'idle' });
      const running = await createAgent(control, token, { name: 'busy', deploy: { replicas: 2, resources: { cpu: 0.5, memory_mb: 256 } } });
      // Nothing runs containers in this suite: record two replicas as up, as the orchestrator would,
      // once the one refresh that follows the create has read the row (what it writes, it decided from that read).
      await waitFor('the refresh after the create', async () => ((control.driver as InMemoryDriver).statusReadsOf(running.id) > 0 ? true : undefined));
      await control.db('agents').where({ id: running.id }).update({ replicas: 2, status: 'running' });
      const response = await control.request('GET', '/account/usage', { token });
      expectStatus(response, 200);
      assert.deepEqual(response.body.usage, { agents: 2, replicas: 2, vcpu: 1, memory_mb: 512, warm_parked_replicas: 0 });
    });

    it('shows the pro plan and an exempt account as such', async () => {
      const pro = await signUpOn('pro');
      const proUsage = await control.request('GET', '/account/usage', { token: pro.token });
      assert.equal(proUsage.body.plan, 'pro');
      assert.deepEqual(proUsage.body.limits, PRO_LIMITS);
      const exempt = await signUpOn('free', true);
      const exemptUsage = await control.request('GET', '/account/usage', { token: exempt.token });
      assert.equal(exemptUsage.body.exempt, true);
    });

    it('starts the period on the first day of the month (UTC), whatever the day', async () => {
      const { token } = await control.signUp();
      const before = control.clock.now();
      control.clock.set(new Date(Date.UTC(2031, 2, 31, 23, 59, 0)));
      try {
        const response = await control.request('GET', '/account/usage', { token: (await control.signUp()).token });
        expectStatus(response, 200);
        assert.equal(response.body.period.start, '2031-03-01T00:00:00.000Z');
      } finally {
        control.clock.set(before);
      }
      expectStatus(await control.request('GET', '/account/usage', { token }), 200);
    });

    it('is readable by a viewer', async () => {
      const owner = await control.signUp();
      const viewer = await signUpMember(control, owner.user.account_id, 'viewer');
      await createAgent(control, owner.token);
      const response = await control.request('GET', '/account/usage', { token: viewer.token });
      expectStatus(response, 200);
      assert.equal(response.body.usage.agents, 1);
    });
  });
});
