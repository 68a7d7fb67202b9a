import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { SecretBox } from '../control/crypto/secret-box.js';
import { jobSpecFor } from '../control/domain/job-spec.js';
import type { AgentRow } from '../control/domain/agent.js';
import { agentUrl } from '../control/services/agent-presenter.js';
import { LOCAL_RUNTIME_IMAGE } from '../control/config/runtime-image.js';
import { startControl, type TestControl } from './support/control-harness.js';
import { createAgent, expectError, expectStatus, signUpMember } from './support/control-api.js';

/**
 * Deployment history and rollback through the API, on real Postgres and without an
 * orchestrator: what is recorded when, what is shown, what a rollback restores.
 * (test/deployments-rollback.test.ts rolls back on podman and reads the replica's env.)
 */
describe('deployments: history and rollback through the API', () => {
  let control: TestControl;

  before(async () => {
    control = await startControl({ DEPLOYMENT_HISTORY_LIMIT: '4' });
  });
  after(async () => control?.close());

  const deploy = async (token: string, agentId: string, body: Record<string, unknown>) => {
    control.clock.advance(1000);
    const response = await control.request('POST', `/agents/${agentId}/deploy`, { token, body });
    expectStatus(response, 202);
    return response.body;
  };
  const history = async (token: string, agentId: string, query = '') => {
    const response = await control.request('GET', `/agents/${agentId}/deployments${query}`, { token });
    expectStatus(response, 200);
    return response.body;
  };
  const rollback = (token: string, agentId: string, deploymentId: string, headers: Record<string, string> = {}) =>
    control.request('POST', `/agents/${agentId}/rollback`, { token, body: { deployment_id: deploymentId }, headers });

  describe('recording', () => {
    it('records a create that deploys as #1 and each deploy after it as the next number, newest first', async () => {
      const { token, user } = await control.signUp();
      const agent = await createAgent(control, token, { deploy: { replicas: 1 } });
      await deploy(token, agent.id, { port: 9000 });
      const latest = await deploy(token, agent.id, { port: 9001 });

      const listed = await history(token, agent.id);
      assert.deepEqual(Object.keys(listed).sort(), ['deployments', 'has_next', 'page', 'page_size', 'total']);
      assert.deepEqual(listed.deployments.map((d: any) => d.number), [3, 2, 1]);
      assert.deepEqual(listed.deployments.map((d: any) => d.deploy.port), [9001, 9000, 8080]);
      assert.deepEqual(listed.deployments.map((d: any) => d.agent_version), [latest.version, latest.version - 1, 1]);
      for (const d of listed.deployments) {
        assert.match(d.id, /^dep_[0-9A-Za-z]{20}$/);
        assert.equal(d.agent_id, agent.id);
        assert.equal(d.created_by, user.id);
        assert.equal(d.rollback_of, null);
        assert.equal(d.image, LOCAL_RUNTIME_IMAGE);
      }
      const one = await control.request('GET', `/agents/${agent.id}/deployments/${listed.deployments[0].id}`, { token });
      expectStatus(one, 200);
      assert.deepEqual(one.body, listed.deployments[0]);
    });

    it('records nothing for a create without deploy, nor for a scale', async () => {
      const { token } = await control.signUp();
      const idle = await createAgent(control, token);
      assert.equal((await history(token, idle.id)).total, 0);

      const agent = await createAgent(control, token, { deploy: { replicas: 1 } });
      expectStatus(await control.request('POST', `/agents/${agent.id}/scale`, { token, body: { direction: 'up', count: 1 } }), 200);
      assert.deepEqual((await history(token, agent.id)).deployments.map((d: any) => d.number), [1]);
    });

    it('queues each deployment as its first event', async () => {
      const { token } = await control.signUp();
      const agent = await createAgent(control, token, { deploy: { replicas: 1 } });
      const [recorded] = (await history(token, agent.id)).deployments;
      const events = await control.db('deployment_events').where({ deployment_id: recorded.id }).orderBy('id');
      assert.deepEqual(events.map((e) => [e.phase, e.message]), [['queued', 'deployment 1 queued']]);
    });

    it('names the user behind a personal API key as created_by', async () => {
      const { token, user } = await control.signUp();
      const key = await control.request('POST', '/api-keys', { token, body: { label: 'ci' } });
      expectStatus(key, 201);
      const agent = await createAgent(control, key.body.key, { deploy: { replicas: 1 } });
      assert.equal((await history(token, agent.id)).deployments[0].created_by, user.id);
    });

    it('marks a deployment still in progress superseded when a newer one starts', async () => {
      const { token } = await control.signUp();
      const agent = await createAgent(control, token, { deploy: { replicas: 1 } });
      await deploy(token, agent.id, { port: 9000 });
      const [newer, older] = (await history(token, agent.id)).deployments;
      assert.equal(newer.status, 'in_progress');
      assert.equal(newer.finished_at, null);
      assert.equal(older.status, 'superseded');
      assert.equal(older.finished_at, control.clock.now().toISOString());
      assert.equal(older.error, null);
    });

    it('cancels a rollout still in progress when the agent is scaled to 0, and only then', async () => {
      const { token } = await control.signUp();
      const agent = await createAgent(control, token, { deploy: { replicas: 2 } });
      expectStatus(await control.request('POST', `/agents/${agent.id}/scale`, { token, body: { direction: 'down', count: 1 } }), 200);
      assert.equal((await history(token, agent.id)).deployments[0].status, 'in_progress', 'a scale to 1 leaves the rollout going');
      expectStatus(await control.request('POST', `/agents/${agent.id}/scale`, { token, body: { direction: 'down', count: 1 } }), 200);
      const [cancelled] = (await history(token, agent.id)).deployments;
      assert.equal(cancelled.status, 'cancelled');
      assert.equal(cancelled.error, 'scaled to 0 replicas before the rollout finished');
      assert.equal(cancelled.finished_at, control.clock.now().toISOString());
    });

    it('ends a deployment to 0 replicas succeeded at once: nothing rolls out', async () => {
      const { token } = await control.signUp();
      const agent = await createAgent(control, token, { deploy: { replicas: 1 } });
      await deploy(token, agent.id, { replicas: 0 });
      const [stopped] = (await history(token, agent.id)).deployments;
      assert.equal(stopped.status, 'succeeded');
      assert.equal(stopped.finished_at, control.clock.now().toISOString());
      const events = await control.db('deployment_events').where({ deployment_id: stopped.id }).orderBy('id');
      assert.deepEqual(events.map((e) => e.phase), ['queued', 'succeeded']);
    });

    it('keeps the newest DEPLOYMENT_HISTORY_LIMIT deployments and pages through them', async () => {
      const { token } = await control.signUp();
      const agent = await createAgent(control, token, { deploy: { replicas: 1 } });
      for (const port of [9001, 9002, 9003, 9004, 9005]) await deploy(token, agent.id, { port });

      const pages = [await history(token, agent.id, '?page=1&page_size=3'), await history(token, agent.id, '?page=2&page_size=3')];
      assert.deepEqual(pages.map((p) => p.deployments.map((d: any) => d.number)), [[6, 5, 4], [3]]);
      assert.deepEqual(pages.map((p) => [p.total, p.page, p.page_size, p.has_next]), [[4, 1, 3, true], [4, 2, 3, false]]);
      assert.equal(await control.db('deployments').where({ agent_id: agent.id }).count('* as n').first().then((r: any) => Number(r.n)), 4);
    });
  });

  describe('what a deployment shows', () => {
    it('never shows a secret: env values are "***", the model key is absent, the prompt only as its SHA-256', async () => {
      const { token } = await control.signUp();
      const secrets = ['sk-model-key-of-the-owner', 'first-secret-value', 'second-secret-value', 'prompt-with-a-private-detail'] as const;
      const agent = await createAgent(control, token, {
        api_key: secrets[0],
        system_prompt: secrets[3],
        deploy: { replicas: 1, env: [{ key: 'TOKEN', value: secrets[1], secret: true }, { key: 'PLAIN', value: 'shown' }] },
      });
      const redeployed = await control.request('POST', `/agents/${agent.id}/deploy`, { token, body: { env: [{ key: 'TOKEN', value: secrets[2], secret: true }] } });
      const listed = await control.request('GET', `/agents/${agent.id}/deployments`, { token });
      const first = listed.body.deployments[1];
      const one = await control.request('GET', `/agents/${agent.id}/deployments/${first.id}`, { token });
      const rolledBack = await rollback(token, agent.id, first.id);
      const after = await control.request('GET', `/agents/${agent.id}/deployments`, { token });

      for (const response of [redeployed, listed, one, rolledBack, after]) {
        assert.ok(response.status < 300, JSON.stringify(response.body));
        const text = JSON.stringify(response.body);
        for (const secret of secrets) assert.ok(!text.includes(secret), `${secret} in ${text}`);
      }
      assert.deepEqual(first.deploy.env, [{ key: 'TOKEN', value: '***', secret: true }, { key: 'PLAIN', value: 'shown', secret: false }]);
      assert.equal(first.system_prompt_sha256, createHash('sha256').update(secrets[3]).digest('hex'));
      assert.equal('api_key' in first || 'api_key_sealed' in first || 'system_prompt' in first, false);
    });

    it('shows no prompt hash and no Nomad job version when there are none', async () => {
      const { token } = await control.signUp();
      const agent = await createAgent(control, token, { deploy: { replicas: 1 } });
      const [only] = (await history(token, agent.id)).deployments;
      assert.equal(only.system_prompt_sha256, null);
      assert.equal(only.nomad_job_version, null);
    });
  });

  describe('rollback', () => {
    /** The job the runner would hand the orchestrator for the agent as stored now, secrets decrypted. */
    async function jobOf(agentId: string) {
      const row: AgentRow = await control.db('agents').where({ id: agentId }).first();
      const settings = { runtimeImage: control.config.runtimeImage, urlOf: (slug: string) => agentUrl(slug, control.config.agentUrl) };
      return jobSpecFor(row, new SecretBox(control.config.masterKeys), settings);
    }

    it("restores the target's configuration, secrets included, though env, model and prompt changed since", async () => {
      const { token } = await control.signUp();
      const agent = await createAgent(control, token, {
        model: 'claude-sonnet-4-5',
        api_key: 'sk-ant-first',
        system_prompt: 'You are the first.',
        deploy: { replicas: 1, env: [{ key: 'PLAIN', value: 'one' }, { key: 'TOKEN', value: 'secret-one', secret: true }] },
      });
      const [first] = (await history(token, agent.id)).deployments;
      await deploy(token, agent.id, { image: 'docker.io/library/nginx:1.27', port: 8081, replicas: 2, env: [{ key: 'PLAIN', value: 'two' }, { key: 'TOKEN', value: 'secret-two', secret: true }] });
      // No endpoint changes the model, its key or the prompt yet: whatever changes them later must not alter what a rollback restores.
      await control.db('agents').where({ id: agent.id }).update({ model: 'gpt-4o', provider: 'openai', system_prompt: 'You are the second.', api_key_sealed: new SecretBox(control.config.masterKeys).seal('sk-openai-second') });
      const before = (await control.request('GET', `/agents/${agent.id}`, { token })).body;

      control.clock.advance(1000);
      const response = await rollback(token, agent.id, first.id);
      expectStatus(response, 202);
      assert.equal(response.body.version, before.version + 1);
      assert.equal(response.headers.get('etag'), `"${before.version + 1}"`);
      assert.equal(response.body.model, 'claude-sonnet-4-5');
      assert.equal(response.body.runtime, 'node');
      assert.deepEqual(response.body.deploy, first.deploy);

      const job = await jobOf(agent.id);
      assert.equal(job.version, before.version + 1);
      assert.equal(job.image, control.config.runtimeImage);
      assert.equal(job.port, 8080);
      assert.equal(job.count, 1);
      assert.equal(job.env.PLAIN, 'one');
      assert.equal(job.env.LLM_MODEL, 'claude-sonnet-4-5');
      assert.equal(job.env.LLM_PROVIDER, 'anthropic');
      assert.equal(job.env.SYSTEM_PROMPT, 'You are the first.');
      assert.deepEqual(job.secretEnv, { TOKEN: 'secret-one', ANTHROPIC_API_KEY: 'sk-ant-first' });

      const [restored] = (await history(token, agent.id)).deployments;
      assert.equal(restored.number, 3);
      assert.equal(restored.rollback_of, first.id);
      assert.equal(restored.agent_version, before.version + 1);
      assert.equal(restored.status, 'in_progress');
      assert.deepEqual(restored.deploy, first.deploy);
      assert.equal(restored.system_prompt_sha256, first.system_prompt_sha256);
    });

    it('honours If-Match: a stale version is 412 and changes nothing', async () => {
      const { token } = await control.signUp();
      const agent = await createAgent(control, token, { deploy: { replicas: 1 } });
      const redeployed = await deploy(token, agent.id, { port: 9000 });
      const [, first] = (await history(token, agent.id)).deployments;
      expectError(await rollback(token, agent.id, first.id, { 'if-match': `"${agent.version}"` }), 412, 'PRECONDITION_FAILED');
      assert.equal((await history(token, agent.id)).total, 2);
      expectStatus(await rollback(token, agent.id, first.id, { 'if-match': `"${redeployed.version}"` }), 202);
    });

    it("answers 404 DEPLOYMENT_NOT_FOUND for a deployment that is not this agent's, and NOT_FOUND for another account's agent", async () => {
      const { token } = await control.signUp();
      const agent = await createAgent(control, token, { deploy: { replicas: 1 } });
      const sibling = await createAgent(control, token, { deploy: { replicas: 1 } });
      const [siblings] = (await history(token, sibling.id)).deployments;
      const [own] = (await history(token, agent.id)).deployments;
      expectError(await rollback(token, agent.id, siblings.id), 404, 'DEPLOYMENT_NOT_FOUND');
      expectError(await rollback(token, agent.id, 'dep_none'), 404, 'DEPLOYMENT_NOT_FOUND');
      expectError(await control.request('GET', `/agents/${agent.id}/deployments/${siblings.id}`, { token }), 404, 'DEPLOYMENT_NOT_FOUND');

      const stranger = await control.signUp();
      expectError(await control.request('GET', `/agents/${agent.id}/deployments`, { token: stranger.token }), 404, 'NOT_FOUND');
      expectError(await control.request('GET', `/agents/${agent.id}/deployments/${own.id}`, { token: stranger.token }), 404, 'NOT_FOUND');
      expectError(await rollback(stranger.token, agent.id, own.id), 404, 'NOT_FOUND');
      assert.equal((await history(token, agent.id)).total, 1);
    });

    it('lets a viewer read the history but not roll back', async () => {
      const owner = await control.signUp();
      const agent = await createAgent(control, owner.token, { deploy: { replicas: 1 } });
      const viewer = await signUpMember(control, owner.user.account_id, 'viewer');
      const [only] = (await history(viewer.token, agent.id)).deployments;
      expectStatus(await control.request('GET', `/agents/${agent.id}/deployments/${only.id}`, { token: viewer.token }), 200);
      expectError(await rollback(viewer.token, agent.id, only.id), 403, 'AUTHORISATION_DENIED');
      const member = await signUpMember(control, owner.user.account_id, 'member');
      expectStatus(await rollback(member.token, agent.id, only.id), 202);
    });

    it("holds a rollback to the plan: the target's replicas must fit beside the account's other agents", async () => {
      const { token } = await control.signUp(); // the free plan: 3 replicas in all
      const agent = await createAgent(control, token, { deploy: { replicas: 3 } });
      const shrunk = await deploy(token, agent.id, { replicas: 1 });
      await createAgent(control, token, { deploy: { replicas: 2 } });
      const [, wide] = (await history(token, agent.id)).deployments;

      const refused = await rollback(token, agent.id, wide.id);
      expectError(refused, 403, 'QUOTA_EXCEEDED');
      assert.deepEqual(refused.body.details, { limit: 'max_replicas', value: 3, requested: 5 });
      assert.equal((await control.request('GET', `/agents/${agent.id}`, { token })).body.version, shrunk.version);
      assert.equal((await history(token, agent.id)).total, 2);
    });
  });
});
