import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { sha256Hex } from '../control/crypto/tokens.js';
import { LOCAL_RUNTIME_IMAGE } from '../control/config/runtime-image.js';
import { startControl, type TestControl } from './support/control-harness.js';
import { createAgent, databaseText, expectError, expectStatus, signUpMember } from './support/control-api.js';

const DEFAULT_DEPLOY = {
  image: LOCAL_RUNTIME_IMAGE,
  port: 8080,
  replicas: 1,
  resources: { cpu: 1, memory_mb: 512, gpu: 0, disk_gb: 1, ephemeral_storage_gb: 1 },
  env: [],
  auto_scale: false,
  min_replicas: 1,
  max_replicas: 10,
  scale_to_zero_after_seconds: 300,
  warm_park_seconds: 600,
  session_ttl_seconds: 86_400,
  trace_content: false,
};

const AGENT_FIELDS = [
  'access', 'access_key', 'created_at', 'deploy', 'error', 'framework', 'id', 'metadata', 'model', 'name',
  'rate_limit_rpm', 'replicas', 'runtime', 'status', 'tags', 'updated_at', 'url', 'version',
].sort();

describe('control API: creating agents', () => {
  let control: TestControl;
  let token: string;

  before(async () => {
    control = await startControl();
  });
  after(async () => control?.close());
  // A fresh account per test, so no test runs into another's quota.
  beforeEach(async () => {
    ({ token } = await control.signUp());
  });

  const post = (body: unknown) => control.request('POST', '/agents', { token, body });
  const expectInvalid = async (body: unknown, loc: (string | number)[]) => expectError(await post(body), 422, 'VALIDATION_ERROR', loc);

  describe('defaults and response', () => {
    it('creates a private agent with every default: 201, ETag, access key once, status stopped', async () => {
      const response = await post({ name: 'Support Bot' });
      expectStatus(response, 201);
      const agent = response.body;
      assert.deepEqual(Object.keys(agent).sort(), AGENT_FIELDS);
      assert.match(agent.id, /^agt_/);
      assert.equal(agent.name, 'Support Bot');
      assert.equal(agent.model, 'gpt-4o');
      assert.equal(agent.access, 'private');
      assert.match(agent.access_key, /^agk_[0-9A-Za-z]+$/);
      assert.equal(agent.rate_limit_rpm, null);
      assert.equal(agent.status, 'stopped');
      assert.equal(agent.replicas, 0);
      assert.equal(agent.error, null);
      assert.deepEqual(agent.tags, []);
      assert.deepEqual(agent.metadata, {});
      assert.deepEqual(agent.deploy, DEFAULT_DEPLOY);
      assert.equal(agent.runtime, 'node');
      assert.equal(agent.framework, 'platform');
      assert.equal(typeof agent.version, 'number');
      assert.equal(response.headers.get('etag'), `"${agent.version}"`);
      assert.match(agent.url, /^http:\/\/[a-z0-9-]+\.agents\.localhost:7080$/);
      assert.ok(agent.url.startsWith('http://support-bot'), agent.url);
      assert.equal(agent.created_at, agent.updated_at);
      assert.equal(agent.created_at, control.clock.now().toISOString());
    });

    it('shows the access key only in the create response', async () => {
      const agent = await createAgent(control, token);
      const fetched = await control.request('GET', `/agents/${agent.id}`, { token });
      expectStatus(fetched, 200);
      assert.equal(fetched.body.access_key, null);
      const listed = await control.request('GET', '/agents', { token });
      assert.equal(listed.body.agents[0].access_key, null);
      assert.ok(!JSON.stringify([fetched.body, listed.body]).includes(agent.access_key));
    });

    it('gives the first key of a private agent the label default, and stores it hashed', async () => {
      const agent = await createAgent(control, token);
      const keys = await control.request('GET', `/agents/${agent.id}/access-keys`, { token });
      expectStatus(keys, 200);
      assert.equal(keys.body.access_keys.length, 1);
      assert.equal(keys.body.access_keys[0].label, 'default');
      assert.equal(keys.body.access_keys[0].key_preview, `${agent.access_key.slice(0, 8)}…`);
      const stored = await databaseText(control.db);
      assert.ok(!stored.includes(agent.access_key), 'the agk_ key is stored in the clear');
      assert.ok(stored.includes(sha256Hex(agent.access_key)));
    });

    it('creates a public agent without an access key', async () => {
      const agent = await createAgent(control, token, { access: 'public' });
      assert.equal(agent.access, 'public');
      assert.equal(agent.access_key, null);
      const keys = await control.request('GET', `/agents/${agent.id}/access-keys`, { token });
      assert.deepEqual(keys.body.access_keys, []);
    });

    it('keeps every given field: model, prompt, rate limit, tags, metadata', async () => {
      const agent = await createAgent(control, token, {
        name: 'Full',
        model: 'claude-3-5-sonnet-latest',
        system_prompt: 'You are terse.',
        rate_limit_rpm: 60,
        tags: ['prod', 'support'],
        metadata: { team: 'care', owner: 'ann' },
      });
      assert.equal(agent.model, 'claude-3-5-sonnet-latest');
      assert.equal(agent.rate_limit_rpm, 60);
      assert.deepEqual(agent.tags, ['prod', 'support']);
      assert.deepEqual(agent.metadata, { team: 'care', owner: 'ann' });
      assert.equal(agent.system_prompt, undefined, 'system_prompt is an input, not a field of the agent');
    });

    it('gives two agents with the same name different URLs', async () => {
      const first = await createAgent(control, token, { name: 'twin' });
      const second = await createAgent(control, token, { name: 'twin' });
      assert.notEqual(first.url, second.url);
    });

    it('creates with deploy: status pending, deploy defaults filled in, replicas 0 until something runs', async () => {
      const agent = await createAgent(control, token, { deploy: { port: 3000 } });
      assert.equal(agent.status, 'pending');
      assert.equal(agent.replicas, 0);
      assert.deepEqual(agent.deploy, { ...DEFAULT_DEPLOY, port: 3000 });
    });

    it('labels an agent with its own image as a container', async () => {
      const agent = await createAgent(control, token, { deploy: { image: 'docker.io/library/nginx:1.27', replicas: 0 } });
      assert.equal(agent.deploy.image, 'docker.io/library/nginx:1.27');
      assert.equal(agent.runtime, 'container');
      assert.equal(agent.framework, 'custom');
    });

    it('keeps every deploy field given', async () => {
      const deploy = {
        image: 'ghcr.io/acme/agent:2.0',
        port: 65535,
        replicas: 2,
        resources: { cpu: 0.5, memory_mb: 256 },
        env: [{ key: 'MODE', value: 'fast', secret: false }],
        auto_scale: true,
        min_replicas: 2,
        max_replicas: 3,
        scale_to_zero_after_seconds: 600,
        warm_park_seconds: 0,
        session_ttl_seconds: 3600,
        trace_content: true,
      };
      const agent = await createAgent(control, token, { deploy });
      assert.deepEqual(agent.deploy, {
        ...deploy,
        resources: { cpu: 0.5, memory_mb: 256, gpu: 0, disk_gb: 1, ephemeral_storage_gb: 1 },
      });
    });
  });

  describe('models', () => {
    for (const model of ['gpt-4o-mini', 'o1-preview', 'o3-mini', 'o4-mini', 'chatgpt-4o-latest', 'claude-3-opus', 'gemini-1.5-pro']) {
      it(`accepts ${model}`, async () => {
        const agent = await createAgent(control, token, { model });
        assert.equal(agent.model, model);
      });
    }

    it('derives the provider from the model family', async () => {
      const expected: Record<string, string> = { 'gpt-4o': 'openai', 'o3-mini': 'openai', 'claude-3-haiku': 'anthropic', 'gemini-2.0-flash': 'google' };
      for (const [model, provider] of Object.entries(expected)) {
        const agent = await createAgent(control, token, { model });
        const row = await control.db('agents').where({ id: agent.id }).first();
        assert.equal(row.provider, provider, model);
      }
    });

    for (const model of ['llama-3-70b', 'mistral-large', 'GPT-4o', '']) {
      it(`refuses the model "${model}" with 422 at body.model`, async () => {
        await expectInvalid({ name: 'bad model', model }, ['body', 'model']);
      });
    }
  });

  describe('field rules', () => {
    it('name: 1 to 128 characters', async () => {
      await expectInvalid({}, ['body', 'name']);
      await expectInvalid({ name: '' }, ['body', 'name']);
      await expectInvalid({ name: 'n'.repeat(129) }, ['body', 'name']);
      await expectInvalid({ name: 7 }, ['body', 'name']);
      expectStatus(await post({ name: 'n'.repeat(128) }), 201);
      expectStatus(await post({ name: 'n' }), 201);
    });

    it('name: counts characters, not bytes or UTF-16 units', async () => {
      expectStatus(await post({ name: '😀'.repeat(128) }), 201);
      await expectInvalid({ name: '😀'.repeat(129) }, ['body', 'name']);
      expectStatus(await post({ name: 'é'.repeat(128) }), 201);
    });

    it('gives an agent whose name has no ASCII letters a valid URL', async () => {
      const agent = await createAgent(control, token, { name: '日本語のエージェント' });
      assert.match(agent.url, /^http:\/\/[a-z0-9]([a-z0-9-]*[a-z0-9])?\.agents\.localhost:7080$/);
      const long = await createAgent(control, token, { name: 'A very long agent name '.repeat(5) });
      const label = new URL(long.url).hostname.split('.')[0]!;
      assert.ok(label.length <= 63, `DNS label of ${label.length} characters`);
    });

    it('system_prompt: at most 32,000 characters', async () => {
      expectStatus(await post({ name: 'long prompt', system_prompt: 'p'.repeat(32_000) }), 201);
      await expectInvalid({ name: 'too long', system_prompt: 'p'.repeat(32_001) }, ['body', 'system_prompt']);
    });

    it('rate_limit_rpm: 1 to 100,000 or null', async () => {
      await expectInvalid({ name: 'rpm', rate_limit_rpm: 0 }, ['body', 'rate_limit_rpm']);
      await expectInvalid({ name: 'rpm', rate_limit_rpm: 100_001 }, ['body', 'rate_limit_rpm']);
      await expectInvalid({ name: 'rpm', rate_limit_rpm: 1.5 }, ['body', 'rate_limit_rpm']);
      await expectInvalid({ name: 'rpm', rate_limit_rpm: '60' }, ['body', 'rate_limit_rpm']);
      assert.equal((await createAgent(control, token, { rate_limit_rpm: 1 })).rate_limit_rpm, 1);
      assert.equal((await createAgent(control, token, { rate_limit_rpm: 100_000 })).rate_limit_rpm, 100_000);
      assert.equal((await createAgent(control, token, { rate_limit_rpm: null })).rate_limit_rpm, null);
    });

    it('access: public or private only', async () => {
      await expectInvalid({ name: 'acc', access: 'secret' }, ['body', 'access']);
    });

    it('tags are strings and metadata values are strings', async () => {
      await expectInvalid({ name: 'tags', tags: [1] }, ['body', 'tags', 0]);
      await expectInvalid({ name: 'tags', tags: 'prod' }, ['body', 'tags']);
      await expectInvalid({ name: 'meta', metadata: { team: 5 } }, ['body', 'metadata', 'team']);
    });

    it('deploy.port: an integer from 1 to 65535', async () => {
      await expectInvalid({ name: 'port', deploy: { port: 0 } }, ['body', 'deploy', 'port']);
      await expectInvalid({ name: 'port', deploy: { port: 65536 } }, ['body', 'deploy', 'port']);
      await expectInvalid({ name: 'port', deploy: { port: '8080' } }, ['body', 'deploy', 'port']);
      expectStatus(await post({ name: 'port', deploy: { port: 1, replicas: 0 } }), 201);
    });

    it('deploy.replicas: not above max_replicas', async () => {
      await expectInvalid({ name: 'replicas', deploy: { replicas: 3, max_replicas: 2 } }, ['body', 'deploy', 'replicas']);
      await expectInvalid({ name: 'replicas', deploy: { replicas: -1 } }, ['body', 'deploy', 'replicas']);
      expectStatus(await post({ name: 'replicas', deploy: { replicas: 2, max_replicas: 2 } }), 201);
    });

    it('deploy.min_replicas: not above max_replicas', async () => {
      await expectInvalid({ name: 'min', deploy: { replicas: 1, min_replicas: 5, max_replicas: 4 } }, ['body', 'deploy', 'min_replicas']);
      expectStatus(await post({ name: 'min', deploy: { replicas: 1, min_replicas: 1, max_replicas: 1 } }), 201);
    });

    it('deploy.min_replicas: 0 only with auto_scale, which scales to zero', async () => {
      const refused = await post({ name: 'zero', deploy: { min_replicas: 0 } });
      expectError(refused, 422, 'VALIDATION_ERROR', ['body', 'deploy', 'min_replicas']);
      assert.match(refused.body.details.errors[0].msg, /min_replicas may be 0 only with auto_scale: true/);
      await expectInvalid({ name: 'zero', deploy: { min_replicas: -1, auto_scale: true } }, ['body', 'deploy', 'min_replicas']);
      const agent = (await post({ name: 'zero', deploy: { replicas: 0, min_replicas: 0, auto_scale: true } })).body;
      assert.equal(agent.deploy.min_replicas, 0);
      // Turning auto_scale off later must not leave a min of 0 behind.
      const redeploy = await control.request('POST', `/agents/${agent.id}/deploy`, { token, body: { auto_scale: false } });
      expectError(redeploy, 422, 'VALIDATION_ERROR', ['body', 'deploy', 'auto_scale']);
    });

    it('deploy.scale_to_zero_after_seconds: 30 to 86,400', async () => {
      await expectInvalid({ name: 'idle', deploy: { scale_to_zero_after_seconds: 29 } }, ['body', 'deploy', 'scale_to_zero_after_seconds']);
      await expectInvalid({ name: 'idle', deploy: { scale_to_zero_after_seconds: 86_401 } }, ['body', 'deploy', 'scale_to_zero_after_seconds']);
      await expectInvalid({ name: 'idle', deploy: { scale_to_zero_after_seconds: 30.5 } }, ['body', 'deploy', 'scale_to_zero_after_seconds']);
      const agent = (await post({ name: 'idle', deploy: { replicas: 0, scale_to_zero_after_seconds: 30 } })).body;
      assert.equal(agent.deploy.scale_to_zero_after_seconds, 30);
    });

    it('deploy.env keys: a variable name, not reserved by the platform, each once', async () => {
      const env = (...keys: string[]) => keys.map((key) => ({ key, value: 'v' }));
      await expectInvalid({ name: 'env', deploy: { env: env('1BAD') } }, ['body', 'deploy', 'env', 0, 'key']);
      await expectInvalid({ name: 'env', deploy: { env: env('GOOD', 'has-dash') } }, ['body', 'deploy', 'env', 1, 'key']);
      for (const reserved of ['AGENT_ID', 'AGENT_NAME', 'SYSTEM_PROMPT', 'LLM_MODEL', 'LLM_PROVIDER']) {
        await expectInvalid({ name: 'env', deploy: { env: env('OK', reserved) } }, ['body', 'deploy', 'env', 1, 'key']);
      }
      const duplicate = await post({ name: 'env', deploy: { env: env('A', 'B', 'A') } });
      expectError(duplicate, 422, 'VALIDATION_ERROR');
      const locs = duplicate.body.details.errors.map((e: any) => JSON.stringify(e.loc));
      assert.ok(locs.some((loc: string) => loc.startsWith('["body","deploy","env"')), locs.join(' '));
      await expectInvalid({ name: 'env', deploy: { env: [{ key: 'A', value: 1 }] } }, ['body', 'deploy', 'env', 0, 'value']);
    });

    it('deploy.image: an image reference', async () => {
      await expectInvalid({ name: 'image', deploy: { image: 'Not An Image!' } }, ['body', 'deploy', 'image']);
    });

    it('refuses unknown fields at any depth with extra_forbidden', async () => {
      const top = await post({ name: 'x', bogus: true });
      expectError(top, 422, 'VALIDATION_ERROR', ['body', 'bogus']);
      assert.equal(top.body.details.errors.find((e: any) => e.loc.join('.') === 'body.bogus').type, 'extra_forbidden');
      await expectInvalid({ name: 'x', deploy: { bogus: 1 } }, ['body', 'deploy', 'bogus']);
      await expectInvalid({ name: 'x', deploy: { resources: { bogus: 1 } } }, ['body', 'deploy', 'resources', 'bogus']);
      await expectInvalid({ name: 'x', deploy: { env: [{ key: 'A', value: 'b', bogus: 1 }] } }, ['body', 'deploy', 'env', 0, 'bogus']);
    });

    it('reports every broken field of one body at once', async () => {
      const response = await post({ name: '', deploy: { port: 0 }, bogus: 1 });
      expectError(response, 422, 'VALIDATION_ERROR', ['body', 'name']);
      expectError(response, 422, 'VALIDATION_ERROR', ['body', 'deploy', 'port']);
      expectError(response, 422, 'VALIDATION_ERROR', ['body', 'bogus']);
    });

    it('refuses a body that is not an object, or malformed JSON, with 422 at body', async () => {
      await expectInvalid([], ['body']);
      await expectInvalid('agent', ['body']);
      const malformed = await control.request('POST', '/agents', {
        token,
        rawBody: '{"name": "broken"',
        headers: { 'content-type': 'application/json' },
      });
      expectError(malformed, 422, 'VALIDATION_ERROR', ['body']);
    });

    it('refuses a body over 1 MiB with 413 PAYLOAD_TOO_LARGE', async () => {
      const response = await control.request('POST', '/agents', {
        token,
        body: { name: 'huge', metadata: { pad: 'x'.repeat(1024) }, system_prompt: 'p'.repeat(1024 * 1024 + 16) },
      });
      expectError(response, 413, 'PAYLOAD_TOO_LARGE');
    });

    it('answers build_path, top level or in deploy, with 501 BUILD_NOT_SUPPORTED', async () => {
      expectError(await post({ name: 'build', build_path: './src' }), 501, 'BUILD_NOT_SUPPORTED');
      expectError(await post({ name: 'build', deploy: { build_path: './src' } }), 501, 'BUILD_NOT_SUPPORTED');
      const listed = await control.request('GET', '/agents', { token });
      assert.equal(listed.body.total, 0, 'a refused create leaves no agent behind');
    });
  });

  describe('secrets', () => {
    it('returns secret env values as *** and stores them encrypted', async () => {
      const secret = `s3cret-${randomBytes(8).toString('hex')}`;
      const agent = await createAgent(control, token, {
        deploy: { replicas: 0, env: [{ key: 'DB_PASSWORD', value: secret, secret: true }, { key: 'MODE', value: 'plain' }] },
      });
      assert.deepEqual(agent.deploy.env, [
        { key: 'DB_PASSWORD', value: '***', secret: true },
        { key: 'MODE', value: 'plain', secret: false },
      ]);
      const fetched = await control.request('GET', `/agents/${agent.id}`, { token });
      assert.deepEqual(fetched.body.deploy.env, agent.deploy.env);

      const row = await control.db('agents').where({ id: agent.id }).first();
      assert.ok(!JSON.stringify(row.deploy).includes(secret), 'the secret env value is stored in the clear');
      assert.ok(!(await databaseText(control.db)).includes(secret));
    });

    it('never returns the model api_key and stores it encrypted', async () => {
      const apiKey = `sk-test-${randomBytes(12).toString('hex')}`;
      const created = await control.request('POST', '/agents', { token, body: { name: 'keyed', api_key: apiKey } });
      expectStatus(created, 201);
      const id = created.body.id;
      const responses = [
        created,
        await control.request('GET', `/agents/${id}`, { token }),
        await control.request('GET', '/agents', { token }),
        await control.request('PATCH', `/agents/${id}`, { token, body: { access: 'public' } }),
      ];
      for (const response of responses) {
        assert.ok(!JSON.stringify(response.body).includes(apiKey), `api_key leaked in ${JSON.stringify(response.body)}`);
        assert.ok(!('api_key' in (response.body.agents?.[0] ?? response.body)));
      }
      const row = await control.db('agents').where({ id }).first();
      assert.ok(row.api_key_sealed, 'the key is kept, sealed');
      assert.ok(!(await databaseText(control.db)).includes(apiKey), 'api_key is stored in the clear');
    });

  });

  describe('roles', () => {
    it('lets a viewer read agents but not create them', async () => {
      const owner = await control.signUp();
      await createAgent(control, owner.token);
      const viewer = await signUpMember(control, owner.user.account_id, 'viewer');
      expectError(await control.request('POST', '/agents', { token: viewer.token, body: { name: 'nope' } }), 403, 'AUTHORISATION_DENIED');
      const listed = await control.request('GET', '/agents', { token: viewer.token });
      expectStatus(listed, 200);
      assert.equal(listed.body.total, 1);
    });

    it('lets a member create agents in the shared account', async () => {
      const owner = await control.signUp();
      const member = await signUpMember(control, owner.user.account_id, 'member');
      const agent = await createAgent(control, member.token, { name: 'by member' });
      expectStatus(await control.request('GET', `/agents/${agent.id}`, { token: owner.token }), 200);
    });
  });
});
