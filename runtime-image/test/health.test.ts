import assert from 'node:assert/strict';
import { FakeProvider } from './helpers/fake-provider.js';
import { EXAMPLE_TEMPLATE_DIR, getJson, platformEnv, postInvoke, startRuntime, TEST_KEYS, type TestRuntime } from './helpers/runtime.js';

describe('GET /health and GET /', () => {
  let fake: FakeProvider;
  let runtime: TestRuntime | undefined;

  before(async () => {
    fake = await FakeProvider.start();
  });
  afterEach(async () => {
    await runtime?.close();
    runtime = undefined;
  });
  after(() => fake.close());

  async function healthWith(env: Record<string, string>) {
    runtime = await startRuntime(env);
    return getJson(`${runtime.url}/health`);
  }

  it('is ready with the key of its provider', async () => {
    for (const provider of ['openai', 'anthropic', 'google'] as const) {
      const health = await healthWith(platformEnv(fake, provider));
      assert.equal(health.status, 200, provider);
      assert.deepEqual(health.body, { status: 'ok', contract: 'v1', agent_id: 'agt_test123' });
      await runtime!.close();
      runtime = undefined;
    }
  });

  it('is unconfigured when the key variable is missing, naming it', async () => {
    const env = platformEnv(fake, 'openai');
    delete env['OPENAI_API_KEY'];
    const health = await healthWith(env);
    assert.equal(health.status, 503);
    assert.equal(health.body.status, 'unconfigured');
    assert.match(health.body.error, /model key missing: OPENAI_API_KEY is not set/);
  });

  it('is unconfigured when the key variable holds an Anthropic key but the model is OpenAI', async () => {
    const health = await healthWith(platformEnv(fake, 'openai', { OPENAI_API_KEY: TEST_KEYS.anthropic }));
    assert.equal(health.status, 503);
    assert.equal(health.body.status, 'unconfigured');
    assert.match(health.body.error, /OPENAI_API_KEY holds an Anthropic key, the model needs an OpenAI key/);
  });

  it('is unconfigured when an Anthropic model gets an OpenAI key', async () => {
    const health = await healthWith(platformEnv(fake, 'anthropic', { ANTHROPIC_API_KEY: TEST_KEYS.openai }));
    assert.equal(health.status, 503);
    assert.match(health.body.error, /ANTHROPIC_API_KEY holds an OpenAI key/);
  });

  it('is unconfigured when a Gemini model gets a key of another provider', async () => {
    const health = await healthWith(platformEnv(fake, 'google', { GOOGLE_API_KEY: TEST_KEYS.anthropic }));
    assert.equal(health.status, 503);
    assert.match(health.body.error, /GOOGLE_API_KEY holds an Anthropic key/);
  });

  it('is unconfigured when the provider cannot be told from the model name', async () => {
    const env = platformEnv(fake, 'openai', { LLM_MODEL: 'llama-3-70b' });
    delete env['LLM_PROVIDER'];
    const health = await healthWith(env);
    assert.equal(health.status, 503);
    assert.match(health.body.error, /set LLM_PROVIDER/);
  });

  it('answers /invoke with 503 NOT_CONFIGURED while unconfigured, without calling the provider', async () => {
    const env = platformEnv(fake, 'google');
    delete env['GOOGLE_API_KEY'];
    runtime = await startRuntime(env);
    fake.reset();
    const response = await postInvoke(runtime.url, { input: 'hello' });
    assert.equal(response.status, 503);
    assert.equal(response.body.error.code, 'NOT_CONFIGURED');
    assert.match(response.body.error.message, /GOOGLE_API_KEY is not set/);
    assert.equal(fake.requests.length, 0);
  });

  it('describes the agent on GET /', async () => {
    runtime = await startRuntime(platformEnv(fake, 'anthropic', { PLATFORM_TEMPLATE_DIR: EXAMPLE_TEMPLATE_DIR }));
    const description = await getJson(`${runtime.url}/`);
    assert.equal(description.status, 200);
    assert.deepEqual(description.body, {
      agent_id: 'agt_test123',
      name: 'test agent',
      provider: 'anthropic',
      model: 'claude-sonnet-4-5',
      template: 'example',
      tools: ['add', 'current_time'],
      contract: 'v1',
      traces: { enabled: false },
    });
  });
});
