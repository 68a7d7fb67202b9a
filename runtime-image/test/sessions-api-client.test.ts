import assert from 'node:assert/strict';
import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AgentServicesTransport, type TransportOptions } from '../src/agent-services-transport.js';
import { BearerTokenFile, type TokenSource } from '../src/bearer-token-file.js';
import { SessionsApiClient } from '../src/sessions-api-client.js';
import { SessionsUnavailableError, SessionTooLargeError, SessionVersionConflictError } from '../src/sessions-api-errors.js';
import { FakeAgentServices } from './helpers/fake-agent-services.js';

const fixedToken = (token: string): TokenSource => ({ current: async () => token, reload: async () => token });

describe('Sessions API v1 client', () => {
  let services: FakeAgentServices;
  const client = (options: Partial<TransportOptions> = {}) =>
    new SessionsApiClient<unknown>(new AgentServicesTransport({ baseUrl: services.url, token: fixedToken('t'), fetch: globalThis.fetch, ...options }));

  beforeEach(async () => {
    services = await FakeAgentServices.start(['t']);
  });
  afterEach(() => services.close());

  it('reads an unknown session as version 0, appends at versions, replaces and deletes', async () => {
    const api = client();
    assert.deepEqual(await api.get('a:1'), { version: 0, messages: [] });
    assert.equal(await api.append('a:1', 0, ['m1']), 1);
    assert.equal(await api.append('a:1', 1, ['m2']), 2);
    assert.deepEqual(await api.get('a:1'), { version: 2, messages: ['m1', 'm2'] });
    assert.equal(await api.replace('a:1', 2, ['m2']), 3);
    assert.deepEqual(await api.get('a:1'), { version: 3, messages: ['m2'] });
    await api.delete('a:1');
    await api.delete('a:1'); // already gone: nothing to do
    assert.deepEqual(await api.get('a:1'), { version: 0, messages: [] });
    assert.equal(services.requests[0]!.path, '/v1/sessions/a%3A1');
  });

  it('reports a conflict and a session too large as their own errors', async () => {
    const api = client();
    await api.append('s', 0, ['m1']);
    await assert.rejects(api.append('s', 0, ['again']), SessionVersionConflictError);
    services.maxBytes = 10;
    await assert.rejects(api.append('s', 1, ['a long message']), SessionTooLargeError);
    assert.deepEqual(await api.get('s'), { version: 1, messages: ['m1'] });
  });

  it('reads the token again after a 401 and sends the request once more', async () => {
    services.tokens.clear();
    services.tokens.add('fresh');
    const api = client({ token: { current: async () => 'stale', reload: async () => 'fresh' } });
    assert.deepEqual(await api.get('s'), { version: 0, messages: [] });
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
    assert.deepEqual(await api.get('s'), { version: 0, messages: [] });

    services.fail('POST', { applyThenAnswer: 502 });
    const error = await api.append('s', 0, ['m1']).catch((caught: unknown) => caught);
    assert.ok(error instanceof SessionsUnavailableError);
    assert.equal(error.mayHaveCommitted, true);
    assert.equal(services.requests.filter((request) => request.method === 'POST').length, 1);
    assert.deepEqual(await api.get('s'), { version: 1, messages: ['m1'] });
  });

  it('sends a write again after a 429 within the wait it allows', async () => {
    const waits: number[] = [];
    const api = client({ wait: async (ms) => waits.push(ms) });
    services.fail('POST', { status: 429, code: 'SESSION_RATE_LIMITED', retryAfter: '1' });
    assert.equal(await api.append('s', 0, ['m1']), 1);
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
    const transport = new AgentServicesTransport({ baseUrl: `http://127.0.0.1:${port}`, token: fixedToken('t'), fetch: globalThis.fetch, timeoutMs: 50, attempts: 2, wait: async () => {} });
    const api = new SessionsApiClient<unknown>(transport);

    const read = await api.get('s').catch((caught: unknown) => caught);
    assert.ok(read instanceof SessionsUnavailableError);
    assert.match(read.message, /did not answer within 50 ms after 2 tries/);

    const write = await api.append('s', 0, ['m']).catch((caught: unknown) => caught);
    assert.ok(write instanceof SessionsUnavailableError);
    assert.equal(write.mayHaveCommitted, true);
    assert.match(write.message, /did not answer within 50 ms$/, 'a write that may have landed is not sent again');
  });
});

describe('bearer token file', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'token-file-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('reads the token trimmed, and again once the file is replaced', async () => {
    const path = join(dir, 'token');
    writeFileSync(path, '  first\n');
    const file = new BearerTokenFile(path);
    assert.equal(await file.current(), 'first');
    writeFileSync(join(dir, 'next'), 'second-token\n');
    renameSync(join(dir, 'next'), path);
    assert.equal(await file.current(), 'second-token');
  });

  it('keeps the token it holds while the file is briefly gone or empty, and fails without one', async () => {
    const path = join(dir, 'token');
    writeFileSync(path, 'held\n');
    const file = new BearerTokenFile(path);
    assert.equal(await file.current(), 'held');
    rmSync(path);
    assert.equal(await file.reload(), 'held');
    writeFileSync(path, '');
    assert.equal(await file.current(), 'held');

    await assert.rejects(new BearerTokenFile(join(dir, 'missing')).current(), /token file .*missing cannot be read \(ENOENT\)/);
  });
});
