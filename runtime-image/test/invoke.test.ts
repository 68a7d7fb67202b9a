import assert from 'node:assert/strict';
import { createServer, request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { FakeProvider } from './helpers/fake-provider.js';
import { getJson, platformEnv, postInvoke, startRuntime, TEST_KEYS, waitFor, type TestRuntime } from './helpers/runtime.js';

describe('POST /invoke', () => {
  let fake: FakeProvider;
  let runtime: TestRuntime;

  before(async () => {
    fake = await FakeProvider.start();
    runtime = await startRuntime(platformEnv(fake, 'openai', { SYSTEM_PROMPT: 'You are the test agent.' }));
  });
  afterEach(() => fake.reset());
  after(async () => {
    await runtime.close();
    await fake.close();
  });

  describe('conversations', () => {
    it('answers with the output, a new session id and the agent id, sending the system prompt and key', async () => {
      fake.reply({ text: 'Hello there.' });
      const response = await postInvoke(runtime.url, { input: 'Hi!' });

      assert.equal(response.status, 200);
      assert.equal(response.body.output, 'Hello there.');
      assert.equal(response.body.agent_id, 'agt_test123');
      assert.match(response.body.session_id, /^[0-9a-f-]{36}$/);
      const sent = fake.requests[0]!;
      assert.equal(sent.headers.authorization, `Bearer ${TEST_KEYS.openai}`);
      assert.equal(sent.body.model, 'gpt-4o');
      assert.deepEqual(sent.body.messages, [
        { role: 'system', content: 'You are the test agent.' },
        { role: 'user', content: 'Hi!' },
      ]);
    });

    it('continues a conversation when the session id is sent back', async () => {
      fake.reply({ text: 'Nice to meet you, Ada.' }, { text: 'Your name is Ada.' });
      const first = await postInvoke(runtime.url, { input: 'My name is Ada.' });
      const second = await postInvoke(runtime.url, { input: 'What is my name?', session_id: first.body.session_id });

      assert.equal(second.status, 200);
      assert.equal(second.body.session_id, first.body.session_id);
      assert.equal(second.body.output, 'Your name is Ada.');
      assert.deepEqual(fake.requests[1]!.body.messages.slice(1), [
        { role: 'user', content: 'My name is Ada.' },
        { role: 'assistant', content: 'Nice to meet you, Ada.' },
        { role: 'user', content: 'What is my name?' },
      ]);
    });

    it('says in Server-Timing how long the session read, the turn and the session write took; a stream, whose headers go first, does not', async () => {
      fake.reply({ text: 'slow model', delayMs: 150 }, { text: 'streamed' });
      const response = await postInvoke(runtime.url, { input: 'Time me.' });
      assert.equal(response.status, 200);
      const timings = Object.fromEntries(
        (response.headers.get('server-timing') ?? '').split(', ').map((metric) => {
          const [name, duration] = metric.split(';dur=');
          return [name, Number(duration)];
        }),
      );
      assert.deepEqual(Object.keys(timings), ['session-read', 'turn', 'session-write']);
      assert.ok(timings.turn! >= 150, `the model's 150 ms are the turn's: ${response.headers.get('server-timing')}`);
      assert.ok(timings['session-read']! < 150 && timings['session-write']! < 150, 'sessions in memory take no part of the model\'s time');

      const streamed = await fetch(`${runtime.url}/invoke`, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'text/event-stream' }, body: JSON.stringify({ input: 'Stream.' }) });
      await streamed.text();
      assert.equal(streamed.headers.get('server-timing'), null);
    });

    it('keeps sessions apart', async () => {
      const a = await postInvoke(runtime.url, { input: 'I am in session A.' });
      const b = await postInvoke(runtime.url, { input: 'I am in session B.' });
      assert.notEqual(a.body.session_id, b.body.session_id);
      await postInvoke(runtime.url, { input: 'Still A?', session_id: a.body.session_id });

      const userTexts = fake.requests[2]!.body.messages.filter((m: any) => m.role === 'user').map((m: any) => m.content);
      assert.deepEqual(userTexts, ['I am in session A.', 'Still A?']);
    });

    it('starts a fresh conversation under an unknown session id', async () => {
      const response = await postInvoke(runtime.url, { input: 'hello', session_id: 'my-own-session-1' });
      assert.equal(response.status, 200);
      assert.equal(response.body.session_id, 'my-own-session-1');
      assert.equal(fake.requests[0]!.body.messages.length, 2);
    });

    it('keeps a failed turn out of the history', async () => {
      fake.reply({ text: 'first answer' }, { status: 500 }, { text: 'third answer' });
      const first = await postInvoke(runtime.url, { input: 'one' });
      const failed = await postInvoke(runtime.url, { input: 'two', session_id: first.body.session_id });
      await postInvoke(runtime.url, { input: 'three', session_id: first.body.session_id });

      assert.equal(failed.status, 502);
      const userTexts = fake.requests[2]!.body.messages.filter((m: any) => m.role === 'user').map((m: any) => m.content);
      assert.deepEqual(userTexts, ['one', 'three']);
    });

    it('serialises concurrent invokes on one session so each sees the one before', async () => {
      fake.reply({ text: 'slow first', delayMs: 300 }, { text: 'second' });
      const first = postInvoke(runtime.url, { input: 'first', session_id: 'shared' });
      await fake.receivedRequests(1);
      // Sent while the first is still waiting for the provider.
      const second = await postInvoke(runtime.url, { input: 'second', session_id: 'shared' });

      assert.equal((await first).body.output, 'slow first');
      assert.equal(second.body.output, 'second');
      assert.deepEqual(fake.requests[1]!.body.messages.slice(1), [
        { role: 'user', content: 'first' },
        { role: 'assistant', content: 'slow first' },
        { role: 'user', content: 'second' },
      ]);
    });
  });

  describe('invalid requests', () => {
    const invalid: Array<[string, unknown, RegExp]> = [
      ['bad JSON', '{"input": ', /not valid JSON/],
      ['a body that is not an object', '["hi"]', /must be a JSON object/],
      ['missing input', { session_id: 'x' }, /"input" is required/],
      ['input of the wrong type', { input: 42 }, /"input" must be a string/],
      ['empty input', { input: '   ' }, /"input" must not be empty/],
      ['input over 100,000 characters', { input: 'x'.repeat(100_001) }, /at most 100000 characters/],
      ['session_id of the wrong type', { input: 'hi', session_id: 7 }, /"session_id" must be a string/],
      ['session_id with unsafe characters', { input: 'hi', session_id: 'a b\n' }, /"session_id" must be/],
      ['a session_id of 129 characters', { input: 'hi', session_id: 'x'.repeat(129) }, /"session_id" must be 1-128/],
      // A URL path would read these as steps, so agent services could not store them.
      ['the session_id "."', { input: 'hi', session_id: '.' }, /not "\." or "\.\."/],
      ['the session_id ".."', { input: 'hi', session_id: '..' }, /not "\." or "\.\."/],
    ];
    for (const [what, body, message] of invalid) {
      it(`answers 400 INVALID_REQUEST to ${what}`, async () => {
        const response = await postInvoke(runtime.url, body);
        assert.equal(response.status, 400);
        assert.equal(response.body.error.code, 'INVALID_REQUEST');
        assert.match(response.body.error.message, message);
        assert.equal(fake.requests.length, 0);
      });
    }

    it('accepts input of exactly 100,000 characters', async () => {
      const response = await postInvoke(runtime.url, { input: 'x'.repeat(100_000) });
      assert.equal(response.status, 200);
    });

    it('answers 400 to a body over 1 MiB', async () => {
      const response = await postInvoke(runtime.url, { input: 'hi', padding: 'x'.repeat(1024 * 1024) });
      assert.equal(response.status, 400);
      assert.equal(response.body.error.code, 'INVALID_REQUEST');
      assert.match(response.body.error.message, /larger than 1048576 bytes/);
    });

    it('answers 400 to a chunked body that grows past 1 MiB', async () => {
      const { status, body } = await new Promise<{ status: number; body: any }>((resolve, reject) => {
        const request = httpRequest(`${runtime.url}/invoke`, { method: 'POST', headers: { 'content-type': 'application/json' } }, (response) => {
          let text = '';
          response.on('data', (chunk) => (text += chunk));
          response.on('end', () => resolve({ status: response.statusCode ?? 0, body: JSON.parse(text) }));
        });
        request.on('error', reject);
        request.write('{"input": "');
        request.end('y'.repeat(1024 * 1024 + 10) + '"}');
      });
      assert.equal(status, 400);
      assert.equal(body.error.code, 'INVALID_REQUEST');
    });
  });

  describe('routing', () => {
    it('answers 404 to an unknown path', async () => {
      const response = await getJson(`${runtime.url}/nope`);
      assert.equal(response.status, 404);
      assert.equal(response.body.error.code, 'NOT_FOUND');
    });

    it('answers 405 with Allow to a wrong method', async () => {
      const getInvoke = await getJson(`${runtime.url}/invoke`);
      assert.equal(getInvoke.status, 405);
      assert.equal(getInvoke.headers.get('allow'), 'POST');
      assert.equal(getInvoke.body.error.code, 'METHOD_NOT_ALLOWED');

      const postHealth = await getJson(`${runtime.url}/health`, { method: 'POST' });
      assert.equal(postHealth.status, 405);
      assert.equal(postHealth.headers.get('allow'), 'GET, HEAD');
    });

    it('ignores a query string', async () => {
      const response = await getJson(`${runtime.url}/health?probe=1`);
      assert.equal(response.status, 200);
    });
  });

  describe('provider failures', () => {
    for (const status of [500, 401, 429]) {
      it(`answers 502 PROVIDER_ERROR when the provider answers ${status}, giving its status but not its text`, async () => {
        fake.reply({ status });
        const response = await postInvoke(runtime.url, { input: 'hello' });
        assert.equal(response.status, 502);
        assert.equal(response.body.error.code, 'PROVIDER_ERROR');
        assert.match(response.body.error.message, new RegExp(`OpenAI\\) answered HTTP ${status}`));
        assert.doesNotMatch(JSON.stringify(response.body), /sk-|fake failure|Incorrect API key/);
      });
    }

    for (const provider of ['anthropic', 'google'] as const) {
      it(`answers 502 when ${provider} answers 500 or 401`, async () => {
        const other = await startRuntime(platformEnv(fake, provider));
        try {
          for (const status of [500, 401]) {
            fake.reply({ status });
            const response = await postInvoke(other.url, { input: 'hello' });
            assert.equal(response.status, 502);
            assert.equal(response.body.error.code, 'PROVIDER_ERROR');
            assert.match(response.body.error.message, new RegExp(`answered HTTP ${status}`));
          }
        } finally {
          await other.close();
        }
      });
    }

    it('answers 502 naming how the provider could not be reached, and logs where it was looked for', async () => {
      const closedPort = await portNobodyListensOn();
      const unreachable = await startRuntime(platformEnv(fake, 'openai', { OPENAI_BASE_URL: `http://127.0.0.1:${closedPort}/v1` }));
      try {
        const response = await postInvoke(unreachable.url, { input: 'hello' });
        assert.equal(response.status, 502);
        assert.equal(response.body.error.code, 'PROVIDER_ERROR');
        assert.match(response.body.error.message, /^the model provider \(OpenAI\) could not be reached \(ECONNREFUSED\)$/);
        // The caller of a (perhaps public) agent is not told where the model server lives; its owner's log is.
        await waitFor(() => unreachable.logs.some((line) => line['path'] === '/invoke'));
        const line = unreachable.logs.find((logged) => logged['path'] === '/invoke')!;
        assert.equal(line['error_code'], 'PROVIDER_ERROR');
        assert.equal(line['error_message'], response.body.error.message);
        assert.equal(line['provider_origin'], `http://127.0.0.1:${closedPort}`, 'scheme, host and port only');
        assert.doesNotMatch(JSON.stringify(response.body), /127\.0\.0\.1/);
      } finally {
        await unreachable.close();
      }
    });

    it('answers 502 when the provider does not answer within RUNTIME_PROVIDER_TIMEOUT_MS', async () => {
      const impatient = await startRuntime(platformEnv(fake, 'openai', { RUNTIME_PROVIDER_TIMEOUT_MS: '200' }));
      try {
        fake.reply({ text: 'too late', delayMs: 2000 });
        const response = await postInvoke(impatient.url, { input: 'hello' });
        assert.equal(response.status, 502);
        assert.match(response.body.error.message, /did not answer within 200 ms/);
      } finally {
        await impatient.close();
      }
    });

    it('retries a 429 and a 500 within RUNTIME_PROVIDER_MAX_RETRIES, then answers', async () => {
      const patient = await startRuntime(platformEnv(fake, 'openai', { RUNTIME_PROVIDER_MAX_RETRIES: '2' }));
      try {
        fake.reply({ status: 429, retryAfterMs: 10 }, { status: 500, retryAfterMs: 10 }, { text: 'third time lucky' });
        const response = await postInvoke(patient.url, { input: 'hello' });
        assert.equal(response.status, 200);
        assert.equal(response.body.output, 'third time lucky');
        assert.equal(fake.requests.length, 3);
      } finally {
        await patient.close();
      }
    });

    it('stops after RUNTIME_PROVIDER_MAX_RETRIES retries and says how many attempts were made', async () => {
      const patient = await startRuntime(platformEnv(fake, 'openai', { RUNTIME_PROVIDER_MAX_RETRIES: '1' }));
      try {
        fake.reply({ status: 503, retryAfterMs: 10 }, { status: 503, retryAfterMs: 10 }, { text: 'never reached' });
        const response = await postInvoke(patient.url, { input: 'hello' });
        assert.equal(response.status, 502);
        assert.match(response.body.error.message, /answered HTTP 503 after 2 attempts/);
        assert.equal(fake.requests.length, 2);
      } finally {
        await patient.close();
      }
    });

    it('does not retry a 401', async () => {
      const patient = await startRuntime(platformEnv(fake, 'openai', { RUNTIME_PROVIDER_MAX_RETRIES: '2' }));
      try {
        fake.reply({ status: 401 });
        const response = await postInvoke(patient.url, { input: 'hello' });
        assert.equal(response.status, 502);
        assert.equal(fake.requests.length, 1);
      } finally {
        await patient.close();
      }
    });
  });

  describe('logs', () => {
    it('writes one JSON line per request with method, path, status, duration and session id', async () => {
      const before = runtime.logs.length;
      const response = await postInvoke(runtime.url, { input: 'log me not' });
      await waitFor(() => runtime.logs.length > before);
      const lines = runtime.logs.slice(before);
      assert.equal(lines.length, 1);
      const line = lines[0]!;
      assert.equal(line['level'], 'info');
      assert.equal(line['method'], 'POST');
      assert.equal(line['path'], '/invoke');
      assert.equal(line['status'], 200);
      assert.equal(typeof line['duration_ms'], 'number');
      assert.equal(line['session_id'], response.body.session_id);
    });

    it('never logs the key, the input or the output', async () => {
      fake.reply({ text: 'SECRET-OUTPUT-TEXT' }, { status: 401 });
      const before = runtime.logs.length;
      await postInvoke(runtime.url, { input: 'SECRET-INPUT-TEXT' });
      await postInvoke(runtime.url, { input: 'SECRET-INPUT-TEXT-2' });
      await postInvoke(runtime.url, '{"input": "SECRET-BAD-JSON');
      await waitFor(() => runtime.logs.length >= before + 3);
      const text = runtime.logText();
      assert.doesNotMatch(text, /SECRET-|sk-test/);
      assert.match(text, /"error_code":"PROVIDER_ERROR"/);
    });
  });
});

/** A port that was just free: listened on, then closed, so a connect is refused (ECONNREFUSED). */
async function portNobodyListensOn(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
