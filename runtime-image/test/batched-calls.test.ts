import assert from 'node:assert/strict';
import { AgentServicesTransport, type AgentServicesCalls, type Answer, type Method } from '../src/agent-services-transport.js';
import { BatchedCalls } from '../src/batched-calls.js';
import { createJsonLogger } from '../src/logger.js';
import { RemoteSessionStore } from '../src/remote-session-store.js';
import { SessionsApiClient } from '../src/sessions-api-client.js';
import { SessionsUnavailableError } from '../src/sessions-api-errors.js';
import { FakeAgentServices, type RecordedSessionsRequest } from './helpers/fake-agent-services.js';

const silentLogger = createJsonLogger(() => {}, 'error');
const storeOptions = { maxBytes: 1_048_576, maxTurns: 100, writeAttempts: 3, startsTurn: (message: string) => message.startsWith('user') };

/** Lets every request of the batcher that was answered free its place. */
const settled = () => new Promise((resolve) => setImmediate(resolve));

const ids = (prefix: string, count: number) => Array.from({ length: count }, (_, i) => `${prefix}-${i}`);

describe('calls to agent services batched (POST /v1/batch)', () => {
  let services: FakeAgentServices;
  let transport: AgentServicesTransport;
  let api: SessionsApiClient<string>;
  let store: RemoteSessionStore<string>;
  /** The pauses the transport took, in ms, none of them waited out. */
  let waits: number[];

  /** The calls alone and the batches sent since `from`. */
  const requestsSince = (from: number) => services.requests.slice(from).filter((request) => !request.batched);
  const callsTo = (path: string, filter: (request: RecordedSessionsRequest) => boolean = () => true) =>
    services.requests.filter((request) => request.calls === undefined && request.path === path && filter(request));
  /** Two calls of other sessions, alone, so that the calls made next wait and go together. */
  const occupyBothRequests = (by: 'reads' | 'writes' = 'reads') =>
    ['busy-1', 'busy-2'].map((id) => (by === 'reads' ? api.get(id) : api.append(id, 0, ['m'])));
  /** Reads of sessions c and d made together, so they go in one batch, where the first read is answered 429 with `retryAfter`. */
  const readTwoInABatchOneLimited = async (retryAfter: string) => {
    for (const id of ['c', 'd']) services.sessions.set(id, { version: 1, messages: [`message of ${id}`] });
    services.fail('GET', { status: 429, code: 'SESSION_RATE_LIMITED', retryAfter });
    const busy = occupyBothRequests('writes');
    const reads = await Promise.allSettled(['c', 'd'].map((id) => api.get(id)));
    await Promise.all(busy);
    return reads;
  };

  beforeEach(async () => {
    services = await FakeAgentServices.start(['t']);
    waits = [];
    transport = new AgentServicesTransport({
      baseUrl: services.url,
      token: { current: async () => 't', reload: async () => 't' },
      wait: async (ms) => {
        waits.push(ms);
      },
    });
    api = new SessionsApiClient<string>(new BatchedCalls(transport));
    store = new RemoteSessionStore<string>(api, storeOptions, silentLogger);
  });
  afterEach(async () => {
    transport.close();
    await services.close();
  });

  /** Each conversation opened and given a turn, all at once, as fifty invokes would. */
  const converseAll = (conversations: string[], turn: number, through = store) =>
    Promise.all(
      conversations.map(async (id) => {
        const session = await through.open(id);
        await session.appendTurn([`user ${id} ${turn}`, `agent ${id} ${turn}`]);
        return session.history;
      }),
    );

  it('keeps fifty conversations served at once right, in far fewer requests than calls', async () => {
    const conversations = ids('conv', 50);
    await converseAll(conversations, 1);
    // Another replica continues them: its reads fetch the whole sessions (200), not 304s.
    const otherReplica = new RemoteSessionStore<string>(api, storeOptions, silentLogger);
    const histories = await converseAll(conversations, 2, otherReplica);

    conversations.forEach((id, i) => {
      assert.deepEqual(histories[i], [`user ${id} 1`, `agent ${id} 1`]);
      assert.deepEqual(services.sessions.get(id)!.messages, [`user ${id} 1`, `agent ${id} 1`, `user ${id} 2`, `agent ${id} 2`]);
    });
    const calls = services.requests.filter((request) => request.calls === undefined);
    assert.equal(calls.length, 200, 'a read and an append per conversation and turn');
    const requests = services.httpRequests().length;
    assert.ok(requests <= 20, `${requests} requests carried 200 calls`);
    assert.ok(services.batches().some((batch) => batch.calls! >= 20), `batches of ${services.batches().map((batch) => batch.calls).join(', ')} calls`);
    assert.ok(services.batches().every((batch) => batch.status === 200));
  });

  it('sends a call made while no other is on its way alone, on its own endpoint', async () => {
    const session = await store.open('solo');
    await session.appendTurn(['user hi', 'agent hello']);
    assert.deepEqual((await store.open('solo')).history, ['user hi', 'agent hello']);

    assert.deepEqual(
      services.requests.map((request) => [request.method, request.path, request.status, request.batched]),
      [
        ['GET', '/v1/sessions/solo', 404, undefined],
        ['POST', '/v1/sessions/solo/messages', 200, undefined],
        ['GET', '/v1/sessions/solo', 304, undefined],
      ],
    );
  });

  it('works with an agent services that has no /v1/batch, sending each call alone once it answered 404', async () => {
    services.batchSupported = false;
    const conversations = ids('old', 20);
    await converseAll(conversations, 1);
    const attempts = services.batches();
    assert.ok(attempts.length >= 1 && attempts.length <= 2, `${attempts.length} batches tried, at most one per request on its way`);
    assert.ok(attempts.every((attempt) => attempt.status === 404));

    const from = services.requests.length;
    await converseAll(conversations, 2);
    const second = requestsSince(from);
    assert.equal(second.length, 40, 'every call of the second turn alone');
    assert.ok(second.every((request) => request.path !== '/v1/batch'));
    for (const id of conversations) assert.deepEqual(services.sessions.get(id)!.messages, [`user ${id} 1`, `agent ${id} 1`, `user ${id} 2`, `agent ${id} 2`]);
  });

  it('sends a call answered 429 in a batch again alone, and the others not', async () => {
    for (const id of ['c', 'd', 'e']) services.sessions.set(id, { version: 1, messages: [`message of ${id}`] });
    services.fail('GET', { status: 429, code: 'SESSION_RATE_LIMITED', retryAfter: '0' });
    const busy = occupyBothRequests('writes');
    const reads = await Promise.all(['c', 'd', 'e'].map((id) => api.get(id)));
    await Promise.all(busy);

    assert.deepEqual(reads.map((read) => read.messages), [['message of c'], ['message of d'], ['message of e']]);
    assert.deepEqual(services.batches().map((batch) => batch.calls), [3]);
    const limited = services.answered('GET', 429);
    assert.equal(limited.length, 1);
    assert.equal(limited[0]!.batched, true);
    assert.deepEqual(callsTo(limited[0]!.path).map((call) => [call.status, call.batched]), [[429, true], [200, undefined]], 'sent again alone');
    for (const id of ['d', 'e']) assert.equal(callsTo(`/v1/sessions/${id}`).length, 1, `${id} was answered in the batch`);
  });

  it("waits a 429's Retry-After from a batch before sending the call again alone, as it would alone", async () => {
    const reads = await readTwoInABatchOneLimited('1');

    assert.deepEqual(reads.map((read) => read.status === 'fulfilled' && read.value.messages), [['message of c'], ['message of d']]);
    const [limited] = services.answered('GET', 429);
    assert.deepEqual(callsTo(limited!.path).map((call) => [call.status, call.batched]), [[429, true], [200, undefined]]);
    assert.deepEqual(waits, [1000], 'Retry-After: 1, waited once before the call went alone');
  });

  it('fails a call at once when a 429 in a batch asks for a longer wait than the transport takes', async () => {
    const reads = await readTwoInABatchOneLimited('30');

    const failed = reads.filter((read) => read.status === 'rejected');
    assert.equal(failed.length, 1);
    assert.ok(failed[0]!.reason instanceof SessionsUnavailableError && /429/.test(failed[0]!.reason.message), String(failed[0]!.reason));
    const [limited] = services.answered('GET', 429);
    assert.equal(callsTo(limited!.path).length, 1, 'not sent again: a caller is waiting, and 30 s is past what the transport waits');
    assert.deepEqual(waits, []);
  });

  it('tries a read answered 500 in a batch as often as alone, the batch counting as its first try', async () => {
    services.sessions.set('c', { version: 1, messages: ['message of c'] });
    services.fail('GET', { status: 500, code: 'INTERNAL_ERROR' }, { status: 500, code: 'INTERNAL_ERROR' }, { status: 500, code: 'INTERNAL_ERROR' });
    const busy = occupyBothRequests('writes');
    const [read, append] = await Promise.allSettled([api.get('c'), api.append('other', 0, ['m'])]);
    await Promise.all(busy);

    assert.equal(append.status, 'fulfilled');
    assert.equal(read.status, 'rejected');
    assert.match((read as PromiseRejectedResult).reason.message, /HTTP 500 after 3 tries/);
    assert.deepEqual(services.batches().map((batch) => batch.calls), [2]);
    assert.deepEqual(callsTo('/v1/sessions/c').map((call) => [call.status, call.batched]), [[500, true], [500, undefined], [500, undefined]]);
    assert.deepEqual(waits, [50, 100], 'a pause before each try after the first, as alone');
  });

  it('keeps a turn exactly once when its append in a batch was answered 500: the store reads whether it landed', async () => {
    const sessions = await Promise.all(['p', 'q', 'r'].map((id) => store.open(id)));
    await settled();
    services.fail('POST', { applyThenAnswer: 500 });
    const busy = occupyBothRequests();
    await Promise.all(sessions.map((session, i) => session.appendTurn([`user ${i}`, `agent ${i}`])));
    await Promise.all(busy);

    const failed = services.answered('POST', 500);
    assert.equal(failed.length, 1);
    assert.equal(failed[0]!.batched, true, 'the 500 was a result inside a batch');
    const id = failed[0]!.path.split('/')[3]!;
    const i = ['p', 'q', 'r'].indexOf(id);
    assert.deepEqual(services.sessions.get(id)!.messages, [`user ${i}`, `agent ${i}`], 'the turn, once');
    assert.equal(callsTo(failed[0]!.path).length, 1, 'found applied by reading, not sent again');
    for (const [n, other] of ['p', 'q', 'r'].entries()) assert.deepEqual(services.sessions.get(other)!.messages, [`user ${n}`, `agent ${n}`]);
  });

  it('sends a read that did not fit the batch answer (503 BATCH_ANSWER_FULL) again alone, and returns its messages', async () => {
    services.maxBytes = 1000;
    const long = (id: string) => [`${id} ${'x'.repeat(550)}`];
    for (const id of ['s1', 's2', 's3', 's4']) services.sessions.set(id, { version: 1, messages: long(id) });
    const busy = occupyBothRequests();
    const reads = await Promise.all(['s1', 's2', 's3', 's4'].map((id) => api.get(id)));
    await Promise.all(busy);

    assert.deepEqual(reads.map((read) => read.messages), ['s1', 's2', 's3', 's4'].map(long));
    assert.deepEqual(services.batches().map((batch) => batch.calls), [4]);
    const full = services.answered('GET', 503);
    assert.deepEqual(full.map((call) => [call.path, call.batched]), [['/v1/sessions/s3', true], ['/v1/sessions/s4', true]], 'past maxBytes besides the first session');
    for (const { path } of full) assert.deepEqual(callsTo(path, (call) => !call.batched).map((call) => call.status), [200]);
    assert.deepEqual(waits, [], 'nothing failed: sent alone at once');
  });

  it('never batches a PUT or a DELETE', async () => {
    for (const id of ['w1', 'w2', 'w3']) services.sessions.set(id, { version: 1, messages: ['old'] });
    const busy = occupyBothRequests();
    const replaced = ['w1', 'w2'].map((id) => api.replace(id, 1, ['new']));
    const deleted = api.delete('w3');
    const reads = ['z1', 'z2', 'z3'].map((id) => api.get(id));
    await Promise.all([...busy, ...replaced, deleted, ...reads]);

    assert.deepEqual(services.batches().map((batch) => batch.calls), [3], 'the reads went together meanwhile');
    const writes = services.requests.filter((request) => request.method === 'PUT' || request.method === 'DELETE');
    assert.deepEqual(writes.map((write) => [write.method, write.status, write.batched]), [
      ['PUT', 200, undefined],
      ['PUT', 200, undefined],
      ['DELETE', 204, undefined],
    ]);
    assert.deepEqual(services.sessions.get('w1')!.messages, ['new']);
    assert.equal(services.sessions.has('w3'), false);
  });

  it('when a batch fails whole with its outcome unknown, sends its reads again alone and reads back its writes', async () => {
    const sessions = await Promise.all(['u1', 'u2'].map((id) => store.open(id)));
    await settled();
    services.failBatch({ applyThenAnswer: 500 });
    const busy = occupyBothRequests();
    const read = api.get('u3');
    await Promise.all([...sessions.map((session, i) => session.appendTurn([`user ${i}`, `agent ${i}`])), read]);
    await Promise.all(busy);

    assert.deepEqual(services.batches().map((batch) => [batch.calls, batch.status]), [[3, 500]]);
    assert.deepEqual(callsTo('/v1/sessions/u3').map((call) => [call.status, call.batched]), [[404, true], [404, undefined]], 'the read sent again alone');
    for (const [i, id] of ['u1', 'u2'].entries()) {
      assert.deepEqual(services.sessions.get(id)!.messages, [`user ${i}`, `agent ${i}`]);
      assert.equal(callsTo(`/v1/sessions/${id}/messages`).length, 1, 'applied in the batch, not sent again');
    }
  });

  it('sends each call of a batch refused whole (4xx) alone', async () => {
    services.failBatch({ status: 422, code: 'VALIDATION_ERROR' });
    const busy = occupyBothRequests();
    const writes = ['v1', 'v2'].map((id) => api.append(id, 0, ['m']));
    const read = api.get('v3');
    await Promise.all([...busy, ...writes, read]);

    assert.deepEqual(services.batches().map((batch) => batch.status), [422]);
    assert.deepEqual(services.answered('POST', 200).map((call) => [call.path, call.batched]), [
      ['/v1/sessions/v1/messages', undefined],
      ['/v1/sessions/v2/messages', undefined],
    ]);
    assert.equal(services.sessions.get('v1')!.version, 1);
  });
});

/** A transport that answers each request only when the test says, to watch what is sent when. */
class HeldTransport implements AgentServicesCalls {
  readonly sent: Array<{ method: Method; path: string; body: any; answer: (answer: Answer) => void }> = [];

  request(method: Method, path: string, body?: unknown): Promise<Answer> {
    return new Promise((resolve) => this.sent.push({ method, path, body, answer: resolve }));
  }

  /** Answers the `index`th request as agent services would a batch: every call 200. */
  answerBatch(index: number): void {
    const { body, answer } = this.sent[index]!;
    answer({ status: 200, body: { results: body.calls.map(() => ({ status: 200, headers: { etag: '"1.1"' }, body: { version: 1, messages: [] } })) } });
  }
}

describe('batching policy', () => {
  const get = (id: string): [Method, string] => ['GET', `/v1/sessions/${id}`];
  const append = (id: string, text = 'm'): [Method, string, unknown] => ['POST', `/v1/sessions/${id}/messages`, { expected_version: 0, messages: [text] }];

  it('has at most two requests on their way; the calls made meanwhile go together in the next', async () => {
    const transport = new HeldTransport();
    const calls = new BatchedCalls(transport);
    const answers = ['a', 'b', 'c', 'd', 'e'].map((id) => calls.request(...get(id)));
    assert.deepEqual(transport.sent.map((sent) => sent.path), ['/v1/sessions/a', '/v1/sessions/b']);

    transport.sent[0]!.answer({ status: 404, body: { code: 'SESSION_NOT_FOUND' } });
    await settled();
    assert.equal(transport.sent.length, 3);
    assert.deepEqual(transport.sent[2]!.body, { calls: ['c', 'd', 'e'].map((id) => ({ method: 'GET', path: `/sessions/${id}` })) });
    transport.answerBatch(2);
    transport.sent[1]!.answer({ status: 404, body: { code: 'SESSION_NOT_FOUND' } });
    const answered = await Promise.all(answers);
    assert.deepEqual(answered[4], { status: 200, etag: '"1.1"', body: { version: 1, messages: [] } });
  });

  it('never puts two calls of one session in one batch, nor more than 64 KiB of bodies', async () => {
    const transport = new HeldTransport();
    const calls = new BatchedCalls(transport);
    const large = 'x'.repeat(40 * 1024);
    void calls.request(...get('busy-1'));
    void calls.request(...get('busy-2'));
    const waiting = [calls.request(...get('a')), calls.request(...append('a')), calls.request(...append('c', large)), calls.request(...append('d', large)), calls.request(...get('e'))];

    transport.sent[0]!.answer({ status: 404, body: undefined });
    await settled();
    const pathsOf = (index: number) => transport.sent[index]!.body.calls.map((call: { method: string; path: string }) => `${call.method} ${call.path}`);
    assert.deepEqual(pathsOf(2), ['GET /sessions/a', 'POST /sessions/c/messages', 'GET /sessions/e']);
    transport.sent[1]!.answer({ status: 404, body: undefined });
    await settled();
    assert.deepEqual(pathsOf(3), ['POST /sessions/a/messages', 'POST /sessions/d/messages']);
    transport.answerBatch(2);
    transport.answerBatch(3);
    assert.equal((await Promise.all(waiting)).length, 5);
  });

  it('answers a batch whose answer it cannot read: its reads sent again alone, its writes failed as maybe applied', async () => {
    const transport = new HeldTransport();
    const calls = new BatchedCalls(transport);
    void calls.request(...get('busy-1'));
    void calls.request(...get('busy-2'));
    const read = calls.request(...get('a'));
    const write = calls.request(...append('b'));
    transport.sent[0]!.answer({ status: 404, body: undefined });
    await settled();

    transport.sent[2]!.answer({ status: 200, body: { results: [{ status: 200 }] } }); // one result for two calls
    const error = await write.catch((caught: unknown) => caught);
    assert.ok(error instanceof SessionsUnavailableError && error.mayHaveCommitted, String(error));
    await settled();
    assert.deepEqual(transport.sent.slice(3).map((sent) => sent.path), ['/v1/sessions/a'], 'the read sent again alone');
    transport.sent[3]!.answer({ status: 404, body: { code: 'SESSION_NOT_FOUND' } });
    assert.equal((await read).status, 404);
  });
});
