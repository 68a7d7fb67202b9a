import assert from 'node:assert/strict';
import { renameSync, utimesSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { MemorySessionStore } from '../src/memory-session-store.js';
import { RemoteSessionStore } from '../src/remote-session-store.js';
import { FakeAgentServices } from './helpers/fake-agent-services.js';
import { FakeProvider } from './helpers/fake-provider.js';
import { platformEnv, postInvoke, startRuntime, type TestRuntime } from './helpers/runtime.js';
import { scratchDirectory } from './helpers/scratch-directory.js';

/** The text of a stored message, whichever shape the SDK gave it (a string, or text parts). */
function textOf(message: any): string {
  return typeof message.content === 'string' ? message.content : message.content.map((part: any) => part.text ?? '').join('');
}

const userTexts = (messages: any[]) => messages.filter((m) => m.role === 'user').map(textOf);

/** A port nothing listens on: taken from the system, then let go. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe('conversations kept by agent services (AGENT_SERVICES_URL)', () => {
  let fake: FakeProvider;
  let services: FakeAgentServices;
  let tokenFile: string;
  let runtimes: TestRuntime[];

  const start = async (extra: Record<string, string> = {}) => {
    const runtime = await startRuntime(
      platformEnv(fake, 'openai', { AGENT_SERVICES_URL: services.url, AGENT_SERVICES_TOKEN_FILE: tokenFile, ...extra }),
    );
    runtimes.push(runtime);
    return runtime;
  };

  before(async () => {
    fake = await FakeProvider.start();
  });
  beforeEach(async () => {
    services = await FakeAgentServices.start(['token-1']);
    tokenFile = join(scratchDirectory('agent-services-token'), 'token');
    writeFileSync(tokenFile, 'token-1\n');
    runtimes = [];
  });
  afterEach(async () => {
    await Promise.all(runtimes.map((runtime) => runtime.close()));
    await services.close();
    fake.reset();
  });
  after(() => fake.close());

  it('continues one conversation across two replicas, the provider getting the whole history every time', async () => {
    const replicas = [await start(), await start()];
    const expected: unknown[] = [];
    let sessionId: string | undefined;
    for (let i = 0; i < 10; i++) {
      fake.reply({ text: `answer ${i}` });
      const response = await postInvoke(replicas[i % 2]!.url, { input: `question ${i}`, ...(sessionId ? { session_id: sessionId } : {}) });
      assert.equal(response.status, 200, JSON.stringify(response.body));
      assert.equal(response.body.output, `answer ${i}`);
      sessionId ??= response.body.session_id;
      assert.equal(response.body.session_id, sessionId);
      expected.push({ role: 'user', content: `question ${i}` });
      assert.deepEqual(fake.requests[i]!.body.messages.slice(1), expected, `turn ${i}, answered by replica ${i % 2}`);
      expected.push({ role: 'assistant', content: `answer ${i}` });
    }
    const stored = services.sessions.get(sessionId!)!;
    assert.equal(stored.version, 10);
    assert.deepEqual(stored.messages.map(textOf), expected.map(textOf));
    assert.ok(services.requests.every((request) => request.authorization === 'Bearer token-1'));
    for (const replica of replicas) assert.ok(!replica.logText().includes('token-1'), 'the token is never logged');
  });

  it('starts a conversation the caller did not name with one call, its write: a new id has nothing to read', async () => {
    const runtime = await start();
    fake.reply({ text: 'first answer' }, { text: 'second answer' });
    const first = await postInvoke(runtime.url, { input: 'first question' });
    assert.equal(first.status, 200, JSON.stringify(first.body));
    const sessionId = first.body.session_id as string;
    assert.deepEqual(
      services.requests.filter((request) => request.calls === undefined).map((request) => `${request.method} ${request.path} ${request.status}`),
      [`POST /v1/sessions/${sessionId}/messages 200`],
    );
    assert.deepEqual(fake.requests[0]!.body.messages.slice(1), [{ role: 'user', content: 'first question' }]);

    const second = await postInvoke(runtime.url, { input: 'second question', session_id: sessionId });
    assert.equal(second.status, 200);
    assert.deepEqual(userTexts(fake.requests[1]!.body.messages), ['first question', 'second question']);
    assert.deepEqual(services.sessions.get(sessionId)!.messages.map(textOf), ['first question', 'first answer', 'second question', 'second answer']);
  });

  it('serves conversations invoked at once with fewer requests to agent services than calls (POST /v1/batch)', async () => {
    const runtime = await start();
    const conversations = Array.from({ length: 30 }, (_, i) => `many-${i}`);
    const responses = await Promise.all(conversations.map((session_id) => postInvoke(runtime.url, { input: `hi from ${session_id}`, session_id })));

    assert.ok(responses.every((response) => response.status === 200));
    for (const id of conversations) assert.deepEqual(services.sessions.get(id)!.messages.map(textOf), [`hi from ${id}`, 'default answer']);
    assert.ok(services.batches().length > 0 && services.batches().every((batch) => batch.status === 200));
    assert.ok(services.httpRequests().length < 60, `${services.httpRequests().length} requests for 60 calls`);
  });

  it('appends a turn after the one another replica wrote meanwhile (409), keeping both', async () => {
    const [a, b] = [await start(), await start()];
    let release!: () => void;
    fake.reply({ text: 'answer to a', until: new Promise<void>((resolve) => (release = resolve)) }, { text: 'answer to b' });

    const fromA = postInvoke(a.url, { input: 'from a', session_id: 'shared' });
    await fake.receivedRequests(1); // a has read the session (empty) and waits for its answer
    const fromB = await postInvoke(b.url, { input: 'from b', session_id: 'shared' });
    release();

    assert.equal(fromB.status, 200);
    assert.equal((await fromA).status, 200);
    assert.equal(services.answered('POST', 409).length, 1, 'a wrote at the version it read, and was told no');
    assert.deepEqual(services.sessions.get('shared')!.messages.map(textOf), ['from b', 'answer to b', 'from a', 'answer to a']);

    await postInvoke(b.url, { input: 'and now?', session_id: 'shared' });
    assert.deepEqual(userTexts(fake.requests[2]!.body.messages), ['from b', 'from a', 'and now?']);
  });

  it('does not add a turn twice when a write was applied but its answer was lost', async () => {
    const runtime = await start();
    services.fail('POST', { applyThenAnswer: 500 });
    const response = await postInvoke(runtime.url, { input: 'once', session_id: 's1' });

    assert.equal(response.status, 200);
    assert.deepEqual(services.sessions.get('s1')!.messages.map(textOf), ['once', 'default answer']);
    assert.equal(services.requests.filter((request) => request.method === 'POST').length, 1, 'found applied by reading, not sent again');
  });

  it('drops the oldest turns itself to stay within SESSION_MAX_BYTES, before agent services would refuse', async () => {
    services.maxBytes = 2048;
    const runtime = await start({ SESSION_MAX_BYTES: '2048' });
    const questions = Array.from({ length: 8 }, (_, i) => `${i} ${'q'.repeat(400)}`);
    for (const input of questions) assert.equal((await postInvoke(runtime.url, { input, session_id: 'long' })).status, 200);

    assert.equal(services.answered('POST', 413).length + services.answered('PUT', 413).length, 0);
    assert.ok(services.answered('PUT', 200).length > 0, 'trimmed sessions replace the stored one');
    const stored = services.sessions.get('long')!.messages as any[];
    assert.ok(Buffer.byteLength(JSON.stringify(stored)) <= 2048);
    assert.equal(stored[0].role, 'user', 'whole turns are dropped');
    const kept = userTexts(stored);
    assert.ok(kept.length >= 2 && kept.length < questions.length);
    assert.deepEqual(kept, questions.slice(-kept.length), 'the oldest went first, the latest are all there');
    const lastSent = fake.requests.at(-1)!.body.messages.slice(1);
    assert.equal(lastSent[0].role, 'user');
  });

  it('drops more when agent services refuse a session within SESSION_MAX_BYTES as too large (413)', async () => {
    services.maxBytes = 2048; // tighter than the runtime's 1 MiB: the settings disagree
    const runtime = await start();
    for (let i = 0; i < 6; i++) {
      const response = await postInvoke(runtime.url, { input: `${i} ${'q'.repeat(400)}`, session_id: 'tight' });
      assert.equal(response.status, 200, JSON.stringify(response.body));
    }
    assert.ok(services.answered('POST', 413).length > 0);
    assert.equal(userTexts(services.sessions.get('tight')!.messages).at(-1)!.slice(0, 2), '5 ');
    assert.ok(runtime.logs.some((line) => line['level'] === 'warn' && String(line['message']).includes('SESSION_MAX_BYTES')));
  });

  it('answers 413 SESSION_TOO_LARGE to a turn that alone is larger than SESSION_MAX_BYTES, leaving the session as it was', async () => {
    const runtime = await start({ SESSION_MAX_BYTES: '1024' });
    await postInvoke(runtime.url, { input: 'small', session_id: 'big' });
    const response = await postInvoke(runtime.url, { input: 'x'.repeat(1500), session_id: 'big' });

    assert.equal(response.status, 413);
    assert.equal(response.body.error.code, 'SESSION_TOO_LARGE');
    assert.match(response.body.error.message, /SESSION_MAX_BYTES/);
    assert.deepEqual(services.sessions.get('big')!.messages.map(textOf), ['small', 'default answer']);
  });

  it('applies RUNTIME_MAX_TURNS_PER_SESSION to the stored conversation, trimming to 3/4 of it so that the turns after a trim are appended', async () => {
    const runtime = await start({ RUNTIME_MAX_TURNS_PER_SESSION: '4' });
    for (const input of ['one', 'two', 'three', 'four', 'five', 'six', 'seven']) await postInvoke(runtime.url, { input, session_id: 's' });
    // The fifth turn would make five: three are kept (3/4 of 4), the fifth included; the sixth fits again, the seventh trims again.
    assert.deepEqual(userTexts(fake.requests[4]!.body.messages), ['one', 'two', 'three', 'four', 'five']);
    assert.deepEqual(userTexts(fake.requests[6]!.body.messages), ['three', 'four', 'five', 'six', 'seven']);
    assert.deepEqual(userTexts(services.sessions.get('s')!.messages), ['five', 'six', 'seven']);
    const writes = services.requests.filter((request) => request.method !== 'GET').map((request) => request.method);
    assert.deepEqual(writes, ['POST', 'POST', 'POST', 'POST', 'PUT', 'POST', 'PUT'], 'the whole is sent only at a trim');
  });

  it('fails the invoke with 503 SESSIONS_UNAVAILABLE when agent services cannot be reached, without answering from an empty history', async () => {
    const runtime = await startRuntime(
      platformEnv(fake, 'openai', { AGENT_SERVICES_URL: `http://127.0.0.1:${await closedPort()}`, AGENT_SERVICES_TOKEN_FILE: tokenFile }),
    );
    runtimes.push(runtime);
    const response = await postInvoke(runtime.url, { input: 'remember me', session_id: 'gone' });

    assert.equal(response.status, 503);
    assert.equal(response.body.error.code, 'SESSIONS_UNAVAILABLE');
    assert.match(response.body.error.message, /agent services could not be reached \(ECONNREFUSED\) after 3 tries/);
    assert.equal(fake.requests.length, 0, 'no turn runs without its history');

    // A new conversation has no history to lose, yet while agent services fail it is read first too, costing no model call.
    const unnamed = await postInvoke(runtime.url, { input: 'a new conversation' });
    assert.equal(unnamed.status, 503);
    assert.equal(unnamed.body.error.code, 'SESSIONS_UNAVAILABLE');
    assert.equal(fake.requests.length, 0, 'no model call spent on an answer that could not be kept');
  });

  it('fails with SESSIONS_UNAVAILABLE once reads keep failing with 5xx, after bounded retries, and recovers with them', async () => {
    const runtime = await start();
    const outage = { status: 503, code: 'SERVICE_UNAVAILABLE' };
    services.fail('GET', outage, outage, outage);
    const failed = await postInvoke(runtime.url, { input: 'hello', session_id: 'flaky' });

    assert.equal(failed.status, 503);
    assert.equal(failed.body.error.code, 'SESSIONS_UNAVAILABLE');
    assert.match(failed.body.error.message, /HTTP 503 after 3 tries/);
    assert.equal(services.requests.length, 3);
    assert.equal(fake.requests.length, 0);
    assert.equal((await postInvoke(runtime.url, { input: 'hello', session_id: 'flaky' })).status, 200);
  });

  it('fails with SESSIONS_UNAVAILABLE when the turn cannot be written, never keeping the answer only in the reply', async () => {
    const runtime = await start();
    const outage = { status: 503, code: 'SERVICE_UNAVAILABLE' };
    services.fail('POST', ...Array.from({ length: 5 }, () => outage));
    const response = await postInvoke(runtime.url, { input: 'lost?', session_id: 'w' });

    assert.equal(response.status, 503);
    assert.equal(response.body.error.code, 'SESSIONS_UNAVAILABLE');
    assert.equal(services.sessions.has('w'), false);
    assert.equal(services.requests.filter((request) => request.method === 'POST').length, 5, 'each write checked by a read before the next');
  });

  it('waits out a 429 with a short Retry-After, and fails at once on a long one', async () => {
    const runtime = await start();
    services.fail('POST', { status: 429, code: 'SESSION_RATE_LIMITED', retryAfter: '0' });
    assert.equal((await postInvoke(runtime.url, { input: 'first', session_id: 'r' })).status, 200);
    assert.equal(services.answered('POST', 429).length, 1);

    services.fail('POST', { status: 429, code: 'SESSION_RATE_LIMITED', retryAfter: '30' });
    const limited = await postInvoke(runtime.url, { input: 'second', session_id: 'r' });
    assert.equal(limited.status, 503);
    assert.equal(limited.body.error.code, 'SESSIONS_UNAVAILABLE');
    assert.match(limited.body.error.message, /429/);
  });

  it('goes on with the new token once the platform rewrites the token file, reading it again at once when the old one is refused', async () => {
    const runtime = await start();
    assert.equal((await postInvoke(runtime.url, { input: 'one', session_id: 't' })).status, 200);

    services.tokens.add('token-2');
    writeFileSync(`${tokenFile}.new`, 'token-2\n');
    // As the platform does it: a new file renamed over the old one, a while later.
    const later = new Date(Date.now() + 60_000);
    utimesSync(`${tokenFile}.new`, later, later);
    renameSync(`${tokenFile}.new`, tokenFile);
    // The runtime looks at the file once a second at most (TOKEN_FILE_RECHECK_MS); a token refused meanwhile makes it look at once.
    services.tokens.delete('token-1');
    const before = services.requests.length;
    assert.equal((await postInvoke(runtime.url, { input: 'two', session_id: 't' })).status, 200);

    const after = services.requests.slice(before);
    assert.ok(after.some((request) => request.authorization === 'Bearer token-2'));
    assert.ok(after.every((request) => (request.status === 401 ? request.authorization === 'Bearer token-1' : request.authorization === 'Bearer token-2')));
    assert.ok(!runtime.logText().includes('token-2'));
  });

  it('keeps conversations in agent services, and says nothing about memory', async () => {
    const runtime = await start();
    assert.ok(runtime.sessions instanceof RemoteSessionStore);
    assert.ok(!runtime.logText().includes('AGENT_SERVICES_URL is not set'));
  });

  it('without AGENT_SERVICES_URL keeps conversations in memory, with one warning at start', async () => {
    const runtime = await startRuntime(platformEnv(fake, 'openai'));
    runtimes.push(runtime);
    await postInvoke(runtime.url, { input: 'hi' });

    assert.ok(runtime.sessions instanceof MemorySessionStore);
    const warnings = runtime.logs.filter((line) => line['level'] === 'warn' && String(line['message']).includes('AGENT_SERVICES_URL is not set'));
    assert.equal(warnings.length, 1);
    assert.equal(services.requests.length, 0);
  });
});
