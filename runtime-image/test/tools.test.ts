import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigError } from '../src/config-error.js';
import { loadConfig } from '../src/config.js';
import { loadTools } from '../src/tools.js';
import { FakeProvider, type FakeProviderName } from './helpers/fake-provider.js';
import { DEFAULT_TEMPLATE_DIR, EXAMPLE_TEMPLATE_DIR, platformEnv, postInvoke, startRuntime, type TestRuntime } from './helpers/runtime.js';
import { scratchDirectory } from './helpers/scratch-directory.js';

/** Where each API carries the tool result the runtime sent back, as text. */
const TOOL_RESULT_OF: Record<FakeProviderName, (body: any) => string> = {
  openai: (body) => body.messages.find((m: any) => m.role === 'tool')?.content,
  anthropic: (body) => JSON.stringify(body.messages.flatMap((m: any) => (Array.isArray(m.content) ? m.content : [])).find((c: any) => c.type === 'tool_result')),
  google: (body) => JSON.stringify(body.contents.flatMap((c: any) => c.parts).find((p: any) => p.functionResponse)),
};

const TOOL_NAMES_OF: Record<FakeProviderName, (body: any) => string[]> = {
  openai: (body) => body.tools.map((t: any) => t.function.name),
  anthropic: (body) => body.tools.map((t: any) => t.name),
  google: (body) => body.tools.flatMap((t: any) => t.functionDeclarations.map((d: any) => d.name)),
};

describe('tools', () => {
  let fake: FakeProvider;
  let runtime: TestRuntime | undefined;

  before(async () => {
    fake = await FakeProvider.start();
  });
  afterEach(async () => {
    await runtime?.close();
    runtime = undefined;
    fake.reset();
  });
  after(() => fake.close());

  for (const provider of ['openai', 'anthropic', 'google'] as const) {
    it(`${provider}: runs a tool the model asks for and returns only the final answer`, async () => {
      runtime = await startRuntime(platformEnv(fake, provider, { PLATFORM_TEMPLATE_DIR: EXAMPLE_TEMPLATE_DIR }));
      fake.reply({ text: 'Let me add those.', toolCalls: [{ name: 'add', args: { a: 2, b: 3 } }] }, { text: 'The sum is 5.' });

      const response = await postInvoke(runtime.url, { input: 'What is 2 + 3?' });

      assert.equal(response.status, 200);
      assert.equal(response.body.output, 'The sum is 5.');
      assert.equal(fake.requests.length, 2);
      assert.deepEqual(TOOL_NAMES_OF[provider](fake.requests[0]!.body).sort(), ['add', 'current_time']);
      // The handler's {sum: 5}, JSON-encoded once more by some APIs.
      assert.match(TOOL_RESULT_OF[provider](fake.requests[1]!.body), /sum\W+5\b/);
    });
  }

  it('reports a throwing handler to the model as a tool error and still answers', async () => {
    runtime = await startRuntime(platformEnv(fake, 'anthropic', { PLATFORM_TEMPLATE_DIR: EXAMPLE_TEMPLATE_DIR }));
    fake.reply({ toolCalls: [{ name: 'add', args: { a: 'two', b: 3 } }] }, { text: 'I could not add those.' });

    const response = await postInvoke(runtime.url, { input: 'add two and 3' });

    assert.equal(response.status, 200);
    assert.equal(response.body.output, 'I could not add those.');
    const toolResult = fake.requests[1]!.body.messages
      .flatMap((m: any) => (Array.isArray(m.content) ? m.content : []))
      .find((c: any) => c.type === 'tool_result');
    assert.equal(toolResult.is_error, true);
    assert.match(JSON.stringify(toolResult.content), /add needs two numbers/);
  });

  it('sends a parameter schema that accepts strings or numbers, all required', async () => {
    runtime = await startRuntime(platformEnv(fake, 'openai', { PLATFORM_TEMPLATE_DIR: EXAMPLE_TEMPLATE_DIR }));
    await postInvoke(runtime.url, { input: 'hi' });
    const add = fake.requests[0]!.body.tools.find((t: any) => t.function.name === 'add').function;
    assert.equal(add.description, 'Adds two numbers and returns their sum.');
    assert.deepEqual(add.parameters.required, ['a', 'b']);
    assert.deepEqual(add.parameters.properties.a, { type: ['string', 'number'], description: 'the first number' });
  });

  it('gives the model up to RUNTIME_MAX_TOOL_STEPS calls, then answers 500 naming the limit', async () => {
    runtime = await startRuntime(
      platformEnv(fake, 'openai', { PLATFORM_TEMPLATE_DIR: EXAMPLE_TEMPLATE_DIR, RUNTIME_MAX_TOOL_STEPS: '3' }),
    );
    fake.defaultReply = { toolCalls: [{ name: 'current_time', args: {} }] };

    const response = await postInvoke(runtime.url, { input: 'loop forever' });

    assert.equal(response.status, 500);
    assert.equal(response.body.error.code, 'INTERNAL_ERROR');
    assert.match(response.body.error.message, /RUNTIME_MAX_TOOL_STEPS/);
    assert.equal(fake.requests.length, 3);
  });

  it('sends no tools for the default template', async () => {
    runtime = await startRuntime(platformEnv(fake, 'openai', { PLATFORM_TEMPLATE_DIR: DEFAULT_TEMPLATE_DIR }));
    await postInvoke(runtime.url, { input: 'hi' });
    assert.equal(fake.requests[0]!.body.tools, undefined);
  });

  describe('loading handlers', () => {
    function templateWith(handler: string, moduleSource = 'export function run() { return 1; }'): string {
      const dir = scratchDirectory('runtime-tools');
      writeFileSync(join(dir, 'tools.mjs'), moduleSource);
      writeFileSync(join(dir, 'agent.yaml'), `tools:\n  - name: run\n    description: runs\n    handler: "${handler}"\n`);
      return dir;
    }

    async function loadFrom(dir: string) {
      const config = loadConfig({ PLATFORM_TEMPLATE_DIR: dir }, { defaultTemplateDir: DEFAULT_TEMPLATE_DIR });
      return loadTools(config.agent.templateDir, config.agent.tools);
    }

    it('loads a handler given without its file extension', async () => {
      const tools = await loadFrom(templateWith('tools:run'));
      assert.deepEqual(Object.keys(tools), ['run']);
    });

    it('refuses a module that does not exist, naming the key', async () => {
      await assert.rejects(loadFrom(templateWith('missing.mjs:run')), (error: Error) => {
        assert.ok(error instanceof ConfigError);
        assert.match(error.message, /tools\[0\]\.handler/);
        return true;
      });
    });

    it('refuses a function the module does not export', async () => {
      await assert.rejects(loadFrom(templateWith('tools.mjs:walk')), /exports no function named "walk"/);
    });

    it('refuses a module outside the template directory', async () => {
      await assert.rejects(loadFrom(templateWith('../../etc/passwd:run')), /must be inside the template directory/);
    });
  });
});
