import assert from 'node:assert/strict';
import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AgentServicesTransport, type TransportOptions } from '../src/agent-services-transport.js';
import { BearerTokenFile, type TokenSource } from '../src/bearer-token-file.js';
import { createJsonLogger } from '../src/logger.js';
import { RemoteSessionStore } from '../src/remote-session-store.js';
import { SessionsApiClient, type StoredSession } from '../src/sessions-api-client.js';
import { SessionsUnavailableError, SessionTooLargeError, SessionVersionConflictError } from '../src/sessions-api-errors.js';
import { FakeAgentServices } from './helpers/fake-agent-services.js';

const silentLogger = createJsonLogger(() => {}, 'error');

const fixedToken = (token: string): TokenSource => ({ current: async () => token, reload: async () => token });

describe('Sessions API v1 client', () => {
  let services: FakeAgentServices;
  const transports: AgentServicesTransport[] = [];
  const client = (options: Partial<TransportOptions> = {}) => {
    const transport = new AgentServicesTransport({ baseUrl: services.url, token: fixedToken('t'), ...options });
    transports.push(transport);
    return new SessionsApiClient<unknown>(transport);
  };

  beforeEach(async () => {
    services = await FakeAgentServices.start(['t']);
  });
  afterEach(async () => {
    for (const transport of transports.splice(0)) transport.close();
    await services.close();
  });

  it('reads an unknown session as version 0, appends at versions, replaces and deletes', async () => {
    const api = client();
    assert.deepEqual(untagged(await api.get('a:1')), { version: 0, messages: [] });
    assert.equal((await api.append('a:1', 0, ['m1'])).version, 1);
    assert.equal((await api.append('a:1', 1, ['m2'])).version, 2);
    assert.deepEqual(untagged(await api.get('a:1')), { version: 2, messages: ['m1', 'm2'] });
    assert.equal((await api.replace('a:1', 2, ['m2'])).version, 3);
    assert.deepEqual(untagged(await api.get('a:1')), { version: 3, messages: ['m2'] });
    await api.delete('a:1');
    await api.delete('a:1'); // already gone: nothing to do
    assert.deepEqual(untagged(await api.get('a:1')), { version: 0, messages: [] });
    assert.equal(services.requests[0]!.path, '/v1/sessions/a%3A1');
  });

  it('asks again with If-None-Match for the session it holds: the held one back on 304, the whole after another write', async () => {
    const api = client();
    const written = await api.append('s', 0, ['m1']);
    assert.match(written.tag ?? '', /^"1\.\d+"$/, 'a write answers with the ETag of what it left');
    const held = { ...written, messages: ['m1'] };
    assert.equal(await api.get('s', held), held, 'unchanged: what the caller holds, as it is');
    assert.deepEqual(services.requests.at(-1), { method: 'GET', path: '/v1/sessions/s', authorization: 'Bearer t', status: 304 });
    const other = await api.append('s', 1, ['m2']);
    const read = await api.get('s', held);
    assert.deepEqual(read, { version: 2, messages: ['m1', 'm2'], tag: other.tag });
  });

  it('keeps what a turn wrote, so the next turn of the conversation reads it back as a 304', async () => {
    const store = new RemoteSessionStore<string>(client() as SessionsApiClient<string>, { maxBytes: 1_000, maxTurns: 100, writeAttempts: 3, startsTurn: (message) => message.startsWith('user') }, silentLogger);
    for (const n of [1, 2, 3]) {
      const session = await store.open('conversation');
      assert.deepEqual(session.history, [1, 2, 3].filter((before) => before < n).flatMap((before) => [`user ${before}`, `agent ${before}`]));
      await session.appendTurn([`user ${n}`, `agent ${n}`]);
    }
    const reads = services.requests.filter((request) => request.method === 'GET').map((request) => request.status);
    assert.deepEqual(reads, [404, 304, 304]);
    // Another replica's turn: the held copy is stale, and the next read fetches the whole.
    const { version } = await client().append('conversation', 3, ['user x', 'agent x']);
    assert.equal(version, 4);
    assert.deepEqual((await store.open('conversation')).history.slice(-2), ['user x', 'agent x']);
    assert.equal(services.requests.at(-1)!.status, 200);
  });

  it('reports a conflict and a session too large as their own errors', async () => {
    const api = client();
    await api.append('s', 0, ['m1']);
    await assert.rejects(api.append('s', 0, ['again']), SessionVersionConflictError);
    services.maxBytes = 10;
    await assert.rejects(api.append('s', 1, ['a long message']), SessionTooLargeError);
    assert.deepEqual(untagged(await api.get('s')), { version: 1, messages: ['m1'] });
  });

  it('reads the token again after a 401 and sends the request once more', async () => {
    services.tokens.clear();
    services.tokens.add('fresh');
    const api = client({ token: { current: async () => 'stale', reload: async () => 'fresh' } });
    assert.deepEqual(untagged(await api.get('s')), { version: 0, messages: [] });
    assert.deepEqual(services.requests.map((request) => [request.authorization, request.status]), [['Bearer stale', 401], ['Bearer fresh', 404]]);
  });

  it('fails without the token in its message when agent services keep refusing it', async () => {
    const api = client({ token: fixedToken('secret-token-value') });
    const error = await api.get('s').catch((caught: unknown) => caught);
    assert.ok(error instanceof SessionsUnavailableError);
    assert.match(error.message, /refused the runtime's token \(401\) after 3 tries/);
    assert.ok(!error.message.includes('secret-token-value'));
  });

  it('tries a read again after a 5xx, but not a write, which may have been applied', async () => {
    const api = client();
    services.fail('GET', { status: 500, code: 'INTERNAL_ERROR' });
    assert.deepEqual(untagged(await api.get('s')), { version: 0, messages: [] });

    services.fail('POST', { applyThenAnswer: 502 });
    const error = await api.append('s', 0, ['m1']).catch((caught: unknown) => caught);
    assert.ok(error instanceof SessionsUnavailableError);
    assert.equal(error.mayHaveCommitted, true);
    assert.equal(services.requests.filter((request) => request.method === 'POST').length, 1);
    assert.deepEqual(untagged(await api.get('s')), { version: 1, messages: ['m1'] });
  });

  it('sends a write again after a 429 within the wait it allows', async () => {
    const waits: number[] = [];
    const api = client({ wait: async (ms) => waits.push(ms) });
    services.fail('POST', { status: 429, code: 'SESSION_RATE_LIMITED', retryAfter: '1' });
    assert.equal((await api.append('s', 0, ['m1'])).version, 1);
    assert.deepEqual(waits, [1000]);
  });

  it('refuses an answer Sessions API v1 does not give', async () => {
    const api = client();
    services.fail('GET', { status: 418, code: 'TEAPOT' });
    await assert.rejects(api.get('s'), (error: unknown) => error instanceof SessionsUnavailableError && /HTTP 418 TEAPOT/.test(error.message));
  });

  it('never sends "." or ".." as an id, which a URL path would read as steps', async () => {
    const api = client();
    await assert.rejects(api.get('..'), /cannot name a session/);
    assert.equal(services.requests.length, 0);
  });
});

describe('agent services transport deadline', () => {
  let silent: Server;
  const sockets: Socket[] = [];

  before(async () => {
    // Accepts connections and never answers.
    silent = createServer((socket) => void sockets.push(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  });
  after(async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise<void>((resolve) => silent.close(() => resolve()));
  });

  it('gives up on a request past its deadline, and on a write whose fate is unknown says so', async () => {
    const { port } = silent.address() as { port: number };
    const transport = new AgentServicesTransport({ baseUrl: `http://127.0.0.1:${port}`, token: fixedToken('t'), timeoutMs: 50, attempts: 2, wait: async () => {} });
    const api = new SessionsApiClient<unknown>(transport);

    const read = await api.get('s').catch((caught: unknown) => caught);
    assert.ok(read instanceof SessionsUnavailableError);
    assert.match(read.message, /did not answer within 50 ms after 2 tries/);

    const write = await api.append('s', 0, ['m']).catch((caught: unknown) => caught);
    assert.ok(write instanceof SessionsUnavailableError);
    assert.equal(write.mayHaveCommitted, true);
    assert.match(write.message, /did not answer within 50 ms$/, 'a write that may have landed is not sent again');
    transport.close();
  });
});

describe('agent services transport over HTTP', () => {
  type Handler = (request: IncomingMessage, response: ServerResponse) => void;
  let handle: Handler;
  let server: ReturnType<typeof createHttpServer>;
  let transport: AgentServicesTransport;
  const open = (options: Partial<TransportOptions> = {}) => {
    const { port } = server.address() as { port: number };
    transport = new AgentServicesTransport({ baseUrl: `http://127.0.0.1:${port}`, token: fixedToken('t'), attempts: 2, wait: async () => {}, ...options });
    return transport;
  };

  beforeEach(async () => {
    server = createHttpServer((request, response) => handle(request, response));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  });
  afterEach(async () => {
    transport.close();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it('sends a body with its Content-Length and reads the JSON answer, over one kept connection', async () => {
    const seen: Array<{ length: string | undefined; body: string; port: number | undefined }> = [];
    handle = (request, response) => {
      let body = '';
      request.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
      request.on('end', () => {
        seen.push({ length: request.headers['content-length'], body, port: request.socket.remotePort });
        response.writeHead(200, { 'content-type': 'application/json' }).end('{"version":1}');
      });
    };
    open();
    const body = { messages: ['é'] };
    assert.deepEqual(await transport.request('POST', '/v1/sessions/s/messages', body), { status: 200, body: { version: 1 } });
    assert.deepEqual(await transport.request('POST', '/v1/sessions/s/messages', body), { status: 200, body: { version: 1 } });
    assert.equal(seen[0]!.length, String(Buffer.byteLength(JSON.stringify(body))), 'bytes, not characters');
    assert.equal(seen[0]!.body, JSON.stringify(body));
    assert.equal(seen[1]!.port, seen[0]!.port, 'the second request reuses the connection');
  });

  it('fails a call whose answer is larger than its bound, declared or streamed, without trying again', async () => {
    let served = 0;
    handle = (request, response) => {
      served += 1;
      if (request.url === '/declared') response.writeHead(200, { 'content-length': '2000' }).end('x'.repeat(2000));
      else {
        response.writeHead(200); // chunked: no length known in advance
        response.write('x'.repeat(600));
        response.end('x'.repeat(600));
      }
    };
    open({ maxAnswerBytes: 1000 });
    for (const path of ['/declared', '/streamed']) {
      const error = await transport.request('GET', path).catch((caught: unknown) => caught);
      assert.ok(error instanceof SessionsUnavailableError);
      assert.equal(error.message, 'agent services answered with a body larger than 1000 bytes');
    }
    assert.equal(served, 2, 'a read is not repeated to meet the same answer');

    handle = (_request, response) => void response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify('y'.repeat(998)));
    assert.equal((await transport.request('GET', '/v1/sessions/s')).body, 'y'.repeat(998), 'an answer of exactly the bound is read');
  });

  it('counts reading the answer in the deadline: a body that stalls fails the call in time, a write as maybe applied', async () => {
    handle = (_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' });
      response.write('{"version":'); // and nothing more
    };
    open({ timeoutMs: 100 });
    const started = Date.now();
    const read = await transport.request('GET', '/v1/sessions/s').catch((caught: unknown) => caught);
    assert.ok(read instanceof SessionsUnavailableError);
    assert.equal(read.message, 'agent services did not answer within 100 ms after 2 tries');
    const write = await transport.request('POST', '/v1/sessions/s/messages', { expected_version: 0, messages: ['m'] }).catch((caught: unknown) => caught);
    assert.ok(write instanceof SessionsUnavailableError);
    assert.equal(write.message, 'agent services did not answer within 100 ms');
    assert.equal(write.mayHaveCommitted, true);
    assert.ok(Date.now() - started < 1000, `three deadlines of 100 ms took ${Date.now() - started} ms`);
  });

  it('sends a write again when no connection could be made, since it surely did not apply', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const { port } = closed.address() as { port: number };
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const waits: number[] = [];
    transport = new AgentServicesTransport({ baseUrl: `http://127.0.0.1:${port}`, token: fixedToken('t'), wait: async (ms) => waits.push(ms) });
    const error = await transport.request('POST', '/v1/sessions/s/messages', { expected_version: 0, messages: ['m'] }).catch((caught: unknown) => caught);
    assert.ok(error instanceof SessionsUnavailableError);
    assert.equal(error.message, 'agent services could not be reached (ECONNREFUSED) after 3 tries');
    assert.equal(error.mayHaveCommitted, false);
    assert.deepEqual(waits, [50, 100]);
  });

  it('reads a 429 Retry-After given as an HTTP date', async () => {
    let calls = 0;
    handle = (_request, response) => {
      calls += 1;
      if (calls === 1) response.writeHead(429, { 'retry-after': new Date(Date.now() + 60_000).toUTCString() }).end();
      else response.writeHead(204).end();
    };
    const waits: number[] = [];
    open({ wait: async (ms) => waits.push(ms), maxRetryAfterMs: 120_000 });
    assert.deepEqual(await transport.request('DELETE', '/v1/sessions/s'), { status: 204, body: undefined });
    assert.ok(waits.length === 1 && waits[0]! > 55_000 && waits[0]! <= 60_000, `waited ${waits.join()}`);
  });
});

describe('bearer token file', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'token-file-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('reads the token trimmed, and again once the file is replaced, looking at the file at most once a recheck interval', async () => {
    const path = join(dir, 'token');
    writeFileSync(path, '  first\n');
    let now = 0;
    const file = new BearerTokenFile(path, 1_000, () => now);
    assert.equal(await file.current(), 'first');
    writeFileSync(join(dir, 'next'), 'second-token\n');
    renameSync(join(dir, 'next'), path);
    now = 999;
    assert.equal(await file.current(), 'first', 'within the interval the token held is used without a look at the file');
    now = 1_000;
    assert.equal(await file.current(), 'second-token');
  });

  it('reads a token rewritten in place at once when asked to reload, as after a 401', async () => {
    const path = join(dir, 'token');
    writeFileSync(path, 'first\n');
    const file = new BearerTokenFile(path, 60_000, () => 0);
    assert.equal(await file.current(), 'first');
    writeFileSync(path, 'second-token\n');
    assert.equal(await file.reload(), 'second-token');
    assert.equal(await file.current(), 'second-token');
  });

  it('reads the whole token at the next look, or at once on reload, after catching one cut short by a write in place (as Nomad writes)', async () => {
    const path = join(dir, 'token');
    writeFileSync(path, 'first\n');
    let now = 0;
    const file = new BearerTokenFile(path, 1_000, () => now);
    assert.equal(await file.current(), 'first');
    // os.WriteFile truncates, then writes: a read between the two halves of a large write sees a prefix.
    writeFileSync(path, 'second-to');
    now = 1_000;
    assert.equal(await file.current(), 'second-to');
    writeFileSync(path, 'second-token\n');
    assert.equal(await file.reload(), 'second-token', 'the 401 the prefix earns reads the file again');
    writeFileSync(path, 'third-to');
    now = 2_000;
    assert.equal(await file.current(), 'third-to');
    writeFileSync(path, 'third-token\n');
    now = 3_000;
    assert.equal(await file.current(), 'third-token', 'the next look sees another size and reads it again');
  });

  it('keeps the token it holds while the file is briefly gone or empty, and fails without one', async () => {
    const path = join(dir, 'token');
    writeFileSync(path, 'held\n');
    let now = 0;
    const file = new BearerTokenFile(path, 1_000, () => now);
    assert.equal(await file.current(), 'held');
    rmSync(path);
    assert.equal(await file.reload(), 'held');
    now = 1_000;
    assert.equal(await file.current(), 'held');
    writeFileSync(path, '');
    now = 2_000;
    assert.equal(await file.current(), 'held');

    await assert.rejects(new BearerTokenFile(join(dir, 'missing')).current(), /token file .*missing cannot be read \(ENOENT\)/);
  });
});

/** A read without its ETag, for comparing what it holds. */
function untagged<M>({ tag: _tag, ...session }: StoredSession<M>): Omit<StoredSession<M>, 'tag'> {
  return session;
}
