import assert from 'node:assert/strict';
import { postInvokeStream } from './helpers/event-stream.js';
import { FakeProvider } from './helpers/fake-provider.js';
import { EXAMPLE_TEMPLATE_DIR, platformEnv, postInvoke, startRuntime, type TestRuntime } from './helpers/runtime.js';

describe('streaming /invoke (Accept: text/event-stream)', () => {
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
    it(`${provider}: streams delta events, then done with the v1 body`, async () => {
      runtime = await startRuntime(platformEnv(fake, provider));
      fake.reply({ text: 'The quick brown fox.' });

      const { status, contentType, events } = await postInvokeStream(runtime.url, { input: 'Tell me about foxes.' });

      assert.equal(status, 200);
      assert.match(contentType ?? '', /^text\/event-stream/);
      assert.equal(fake.requests[0]!.stream, true, 'the provider was asked to stream');
      const deltas = events.filter((e) => e.event === 'delta');
      assert.ok(deltas.length > 1, 'the answer came in several deltas');
      assert.equal(deltas.map((e) => e.data.text).join(''), 'The quick brown fox.');
      const done = events.at(-1)!;
      assert.equal(done.event, 'done');
      assert.equal(done.data.output, 'The quick brown fox.');
      assert.equal(done.data.agent_id, 'agt_test123');
      assert.equal(typeof done.data.session_id, 'string');
    });

    it(`${provider}: runs tools while streaming and ends with the final answer only`, async () => {
      runtime = await startRuntime(platformEnv(fake, provider, { PLATFORM_TEMPLATE_DIR: EXAMPLE_TEMPLATE_DIR }));
      fake.reply({ toolCalls: [{ name: 'add', args: { a: 20, b: 22 } }] }, { text: 'It is 42.' });

      const { events } = await postInvokeStream(runtime.url, { input: 'What is 20 + 22?' });

      assert.equal(fake.requests.length, 2);
      assert.equal(events.at(-1)!.event, 'done');
      assert.equal(events.at(-1)!.data.output, 'It is 42.');
    });
  }

  it('continues the streamed conversation with a plain v1 invoke', async () => {
    runtime = await startRuntime(platformEnv(fake, 'openai'));
    fake.reply({ text: 'Streamed hello.' }, { text: 'Plain reply.' });
    const { events } = await postInvokeStream(runtime.url, { input: 'hello' });
    const sessionId = events.at(-1)!.data.session_id;

    const plain = await postInvoke(runtime.url, { input: 'again', session_id: sessionId });

    assert.deepEqual(Object.keys(plain.body).sort(), ['agent_id', 'output', 'session_id']);
    assert.deepEqual(fake.requests[1]!.body.messages.slice(1), [
      { role: 'user', content: 'hello' },
      { role: 'assistant', content: 'Streamed hello.' },
      { role: 'user', content: 'again' },
    ]);
  });

  it('answers a provider failure before any event as a plain JSON 502', async () => {
    runtime = await startRuntime(platformEnv(fake, 'anthropic'));
    fake.reply({ status: 500 });
    const response = await postInvokeStream(runtime.url, { input: 'hello' });
    assert.equal(response.status, 502);
    assert.match(response.contentType ?? '', /application\/json/);
    assert.equal(JSON.parse(response.raw).error.code, 'PROVIDER_ERROR');
  });

  it('ends with an error event when the provider fails after the answer began', async () => {
    runtime = await startRuntime(platformEnv(fake, 'openai', { PLATFORM_TEMPLATE_DIR: EXAMPLE_TEMPLATE_DIR }));
    fake.reply({ text: 'Let me check. ', toolCalls: [{ name: 'current_time', args: {} }] }, { status: 500 });

    const { status, events } = await postInvokeStream(runtime.url, { input: 'time?' });

    assert.equal(status, 200);
    assert.equal(events[0]!.event, 'delta');
    assert.deepEqual(events.at(-1), {
      event: 'error',
      data: { error: { code: 'PROVIDER_ERROR', message: 'the model provider (OpenAI) answered HTTP 500' } },
    });
  });

  it('validates the body as v1 does', async () => {
    runtime = await startRuntime(platformEnv(fake, 'openai'));
    const response = await postInvokeStream(runtime.url, { session_id: 'x' });
    assert.equal(response.status, 400);
    assert.equal(JSON.parse(response.raw).error.code, 'INVALID_REQUEST');
  });
});
