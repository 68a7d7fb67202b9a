import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { AgentTokens } from '../control/crypto/agent-token.js';
import { masterKeyId, SecretBox } from '../control/crypto/secret-box.js';
import { AgentSessionService } from '../control/services/agent-session-service.js';
import { KeyRotation } from '../control/services/key-rotation.js';
import { AgentSessionRepository } from '../control/repositories/agent-sessions.js';
import { connectDatabase } from '../control/db/database.js';
import type { LeasedWindowLimiter } from '../control/services/rate-limiter.js';
import { AgentServicesTransport, type AgentServicesCalls } from '../runtime-image/src/agent-services-transport.js';
import { BatchedCalls } from '../runtime-image/src/batched-calls.js';
import { createJsonLogger } from '../runtime-image/src/logger.js';
import { RemoteSessionStore } from '../runtime-image/src/remote-session-store.js';
import { SessionsApiClient } from '../runtime-image/src/sessions-api-client.js';
import { startControl, type ApiResponse, type TestControl } from './support/control-harness.js';
import { createAgent, databaseText, expectError, expectStatus, signUpMember } from './support/control-api.js';
import { auditEvents, expectOneEvent, userActor } from './support/audit.js';

/**
 * The agent services endpoint's Sessions API v1 (issue 37; docs/contract.md, "Sessions API
 * v1") against real Postgres and Redis, on the listener the harness serves beside the
 * control API, and the owner's view of sessions on the control API.
 */
describe('agent services: sessions', () => {
  let control: TestControl;
  const MAX_BYTES = 4096;
  const MAX_PER_AGENT = 3;
  const WRITES_PER_SECOND = 10;
  const READS_PER_SECOND = 30;

  before(async () => {
    control = await startControl({
      SESSION_MAX_BYTES: String(MAX_BYTES),
      SESSIONS_MAX_PER_AGENT: String(MAX_PER_AGENT),
      SESSION_WRITES_PER_SECOND: String(WRITES_PER_SECOND),
      SESSION_READS_PER_SECOND: String(READS_PER_SECOND),
    });
  });
  after(async () => control?.close());

  interface CallOptions {
    token?: string;
    body?: unknown;
    rawBody?: string;
    authorization?: string;
    ifNoneMatch?: string;
  }

  /** A request a replica would send: `path` under /v1, with its token. */
  async function call(method: string, path: string, options: CallOptions = {}): Promise<ApiResponse> {
    const headers: Record<string, string> = {};
    if (options.authorization !== undefined) headers.authorization = options.authorization;
    else if (options.token) headers.authorization = `Bearer ${options.token}`;
    if (options.ifNoneMatch !== undefined) headers['if-none-match'] = options.ifNoneMatch;
    const body = options.body !== undefined ? JSON.stringify(options.body) : options.rawBody;
    if (body !== undefined) headers['content-type'] = 'application/json';
    const response = await fetch(`${control.agentServicesUrl}/v1${path}`, { method, headers, body });
    const text = await response.text();
    return { status: response.status, body: text ? JSON.parse(text) : undefined, headers: response.headers };
  }

  /** A GET with its path exactly as given: no URL parser between the test and the server. */
  const rawGet = (path: string, token: string) =>
    new Promise<{ status: number; text: string }>((resolve, reject) => {
      const { hostname, port } = new URL(control.agentServicesUrl);
      const request = httpRequest({ hostname, port, path, headers: { authorization: `Bearer ${token}` } }, (response) => {
        let text = '';
        response.setEncoding('utf8').on('data', (chunk: string) => (text += chunk)).on('end', () => resolve({ status: response.statusCode!, text }));
      });
      request.on('error', reject).end();
    });

  const append = (token: string, sessionId: string, expected_version: number, messages: unknown[]) =>
    call('POST', `/sessions/${sessionId}/messages`, { token, body: { expected_version, messages } });
  const replace = (token: string, sessionId: string, expected_version: number, messages: unknown[]) =>
    call('PUT', `/sessions/${sessionId}`, { token, body: { expected_version, messages } });
  const read = (token: string, sessionId: string) => call('GET', `/sessions/${sessionId}`, { token });

  /** A new account's agent and a replica token for it. */
  async function agentWithToken(body: Record<string, unknown> = {}) {
    const owner = await control.signUp();
    const agent = await createAgent(control, owner.token, body);
    return { owner, agent, token: control.mintAgentToken(agent.id) };
  }

  const turn = (n: number) => ({ role: n % 2 ? 'assistant' : 'user', content: `turn ${n}` });

  describe('authentication', () => {
    it('refuses a missing, malformed, forged, tampered or expired token with 401 UNAUTHENTICATED and WWW-Authenticate: Bearer', async () => {
      const { agent, token } = await agentWithToken();
      expectStatus(await append(token, 'conv-1', 0, [turn(0)]), 200);
      const [version, payload, mac] = token.split('.') as [string, string, string];
      const claims = JSON.parse(Buffer.from(payload, 'base64url').toString());
      const otherPayload = Buffer.from(JSON.stringify({ ...claims, a: 'agt_someoneElse00000000' })).toString('base64url');
      const flipped = mac.slice(0, 10) + (mac[10] === 'A' ? 'B' : 'A') + mac.slice(11);
      const refused: [string, CallOptions][] = [
        ['no Authorization', {}],
        ['not Bearer', { authorization: `Basic ${Buffer.from(`x:${token}`).toString('base64')}` }],
        ['not a token', { token: 'ast1.garbage' }],
        ['a user session token is not a replica token', { token: (await control.signUp()).token }],
        ['signed with a key the platform does not hold', { token: new AgentTokens([randomBytes(32)], 3600).mint(agent.id, 'replica-1', control.clock.now()).token }],
        ['claims of another agent under the original MAC', { token: `${version}.${otherPayload}.${mac}` }],
        ['a MAC changed by one character', { token: `${version}.${payload}.${flipped}` }],
        ['a MAC cut short', { token: `${version}.${payload}.${mac.slice(0, -2)}` }],
      ];
      for (const [what, options] of refused) {
        const response = await call('GET', '/sessions/conv-1', options);
        expectError(response, 401, 'UNAUTHENTICATED');
        assert.equal(response.headers.get('www-authenticate'), 'Bearer', what);
      }
      // Nothing is told without a token, not even which paths exist.
      expectError(await call('GET', '/no-such-endpoint'), 401, 'UNAUTHENTICATED');
      expectError(await call('GET', '/no-such-endpoint', { token }), 404, 'NOT_FOUND');
      expectStatus(await read(token, 'conv-1'), 200);
    });

    it('accepts a token until AGENT_SERVICES_TOKEN_TTL_SECONDS have passed since it was minted, then refuses it', async () => {
      const { agent, token } = await agentWithToken();
      const ttlMs = control.config.agentServices.tokenTtlSeconds * 1000;
      expectStatus(await append(token, 'conv-1', 0, [turn(0)]), 200);
      control.clock.advance(ttlMs - 1000);
      expectStatus(await read(token, 'conv-1'), 200);
      control.clock.advance(1000);
      expectError(await read(token, 'conv-1'), 401, 'UNAUTHENTICATED');
      expectError(await append(token, 'conv-1', 1, [turn(1)]), 401, 'UNAUTHENTICATED');
      // A fresh token, as a driver writes before the old one runs out, reads on: the session outlived the token.
      const fresh = control.mintAgentToken(agent.id, 'replica-2');
      assert.equal((await read(fresh, 'conv-1')).body.version, 1);
    });

    it('verifies tokens signed under an older master key still configured, so a rotation does not cut replicas off', () => {
      const [older, current] = [randomBytes(32), randomBytes(32)];
      const now = new Date('2025-12-01T10:00:00Z');
      const minted = new AgentTokens([older], 3600).mint('agt_rotating', 'replica-1', now);
      assert.deepEqual(new AgentTokens([current, older], 3600).verify(minted.token, now), { agentId: 'agt_rotating', replicaId: 'replica-1', validUntil: minted.expiresAt });
      assert.equal(new AgentTokens([current], 3600).verify(minted.token, now), null);
      assert.equal(minted.expiresAt.toISOString(), '2025-12-01T11:00:00.000Z');
      assert.match(minted.token, /^ast1\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{43}$/);
    });

    it("refuses the token of a deleted agent, whose sessions went with it", async () => {
      const { owner, agent, token } = await agentWithToken();
      expectStatus(await append(token, 'conv-1', 0, [turn(0)]), 200);
      expectStatus(await append(token, 'conv-2', 0, [turn(0)]), 200);
      assert.equal((await control.db('agent_sessions').where({ agent_id: agent.id })).length, 2);
      expectStatus(await control.request('DELETE', `/agents/${agent.id}`, { token: owner.token }), 204);
      assert.deepEqual(await control.db('agent_sessions').where({ agent_id: agent.id }), []);
      expectError(await read(token, 'conv-1'), 401, 'UNAUTHENTICATED');
      expectError(await append(token, 'conv-3', 0, [turn(0)]), 401, 'UNAUTHENTICATED');
    });
  });

  describe('one agent, one set of sessions', () => {
    it("keeps agents apart: A's token neither reads, writes nor deletes B's session of the same id", async () => {
      const a = await agentWithToken();
      const b = await agentWithToken();
      const secret = { role: 'user', content: `B's conversation ${randomBytes(4).toString('hex')}` };
      expectStatus(await append(b.token, 'shared-id', 0, [secret]), 200);

      expectError(await read(a.token, 'shared-id'), 404, 'SESSION_NOT_FOUND');
      expectError(await append(a.token, 'shared-id', 1, [turn(1)]), 409, 'SESSION_VERSION_CONFLICT');
      expectError(await call('DELETE', '/sessions/shared-id', { token: a.token }), 404, 'SESSION_NOT_FOUND');
      // A's own session of that id is another session.
      const created = await append(a.token, 'shared-id', 0, [turn(0)]);
      expectStatus(created, 200);
      assert.equal(created.body.version, 1);
      expectStatus(await call('DELETE', '/sessions/shared-id', { token: a.token }), 204);

      const seen = await read(b.token, 'shared-id');
      expectStatus(seen, 200);
      assert.equal(seen.body.version, 1);
      assert.deepEqual(seen.body.messages, [secret]);
    });
  });

  describe('reading and writing', () => {
    it('appends with versions: expected 0 creates at 1, then 1 → 2, 2 → 3; a read has every message in order', async () => {
      const { token } = await agentWithToken();
      const first = await append(token, 'conv:2025-12.a_b', 0, [turn(0), turn(1)]);
      expectStatus(first, 200);
      assert.deepEqual(Object.keys(first.body).sort(), ['expires_at', 'session_id', 'size_bytes', 'version']);
      assert.equal(first.body.session_id, 'conv:2025-12.a_b');
      assert.equal(first.body.version, 1);
      assert.equal(first.body.size_bytes, Buffer.byteLength(JSON.stringify([turn(0), turn(1)])));
      assert.equal((await append(token, 'conv:2025-12.a_b', 1, [turn(2)])).body.version, 2);
      // Messages are any JSON: the platform never looks inside.
      const odd = [null, 42, 'plain text', [1, [2]], { nested: { ünïcode: '✓ \u2028' } }];
      const third = await append(token, 'conv:2025-12.a_b', 2, odd);
      assert.equal(third.body.version, 3);

      const got = await read(token, 'conv:2025-12.a_b');
      expectStatus(got, 200);
      assert.deepEqual(Object.keys(got.body).sort(), ['expires_at', 'messages', 'session_id', 'size_bytes', 'version']);
      assert.match(got.headers.get('content-type') ?? '', /^application\/json/);
      const all = [turn(0), turn(1), turn(2), ...odd];
      assert.deepEqual(got.body.messages, all);
      assert.equal(got.body.version, 3);
      assert.equal(got.body.size_bytes, Buffer.byteLength(JSON.stringify(all)));
      assert.equal(third.body.size_bytes, got.body.size_bytes);
    });

    it('answers a write at another version with 409 SESSION_VERSION_CONFLICT and details.current_version, and writes nothing', async () => {
      const { token } = await agentWithToken();
      const absent = await append(token, 'conv-1', 3, [turn(0)]);
      expectError(absent, 409, 'SESSION_VERSION_CONFLICT');
      assert.equal(absent.body.details.current_version, 0);
      expectError(await read(token, 'conv-1'), 404, 'SESSION_NOT_FOUND');

      expectStatus(await append(token, 'conv-1', 0, [turn(0)]), 200);
      for (const stale of [0, 2]) {
        const conflict = await append(token, 'conv-1', stale, [turn(9)]);
        expectError(conflict, 409, 'SESSION_VERSION_CONFLICT');
        assert.equal(conflict.body.details.current_version, 1);
        expectError(await replace(token, 'conv-1', stale, [turn(9)]), 409, 'SESSION_VERSION_CONFLICT');
      }
      const after = await read(token, 'conv-1');
      assert.equal(after.body.version, 1);
      assert.deepEqual(after.body.messages, [turn(0)]);
    });

    it('lets exactly one of two concurrent writes expecting the same version through: the other gets 409', async () => {
      const { token } = await agentWithToken();
      // Creating: both expect 0.
      const created = await Promise.all([append(token, 'race', 0, [{ by: 'first' }]), append(token, 'race', 0, [{ by: 'second' }])]);
      assert.deepEqual(created.map((response) => response.status).sort(), [200, 409], JSON.stringify(created.map((response) => response.body)));
      assert.equal(created.find((response) => response.status === 409)!.body.details.current_version, 1);
      // Appending: both expect 1.
      const appended = await Promise.all([append(token, 'race', 1, [{ by: 'third' }]), append(token, 'race', 1, [{ by: 'fourth' }])]);
      assert.deepEqual(appended.map((response) => response.status).sort(), [200, 409]);
      assert.equal(appended.find((response) => response.status === 409)!.body.details.current_version, 2);

      // The session holds the winner of each round, and nothing of the losers.
      const winnerOf = (round: ApiResponse[], names: string[]) => names[round.findIndex((response) => response.status === 200)];
      const final = await read(token, 'race');
      assert.equal(final.body.version, 2);
      assert.deepEqual(final.body.messages, [{ by: winnerOf(created, ['first', 'second']) }, { by: winnerOf(appended, ['third', 'fourth']) }]);
    });

    it('answers many calls made at once, which go to Postgres together, each as if alone: one of eight writes at a version applies; two agents\' sessions of one id stay apart', async () => {
      const a = await agentWithToken();
      const b = await agentWithToken();
      expectStatus(await append(a.token, 'crowd', 0, [{ by: 'a' }]), 200);
      expectStatus(await append(b.token, 'crowd', 0, [{ by: 'b' }]), 200);
      const writers = Array.from({ length: 8 }, (_, writer) => writer);
      control.clock.advance(1000); // each round below within SESSION_WRITES_PER_SECOND

      const writes = await Promise.all(writers.map((writer) => append(a.token, 'crowd', 1, [{ by: `a${writer}` }])));
      assert.deepEqual(writes.filter((response) => response.status === 200).length, 1, JSON.stringify(writes.map((response) => response.status)));
      for (const lost of writes.filter((response) => response.status !== 200)) {
        expectError(lost, 409, 'SESSION_VERSION_CONFLICT');
        assert.equal(lost.body.details.current_version, 2);
      }
      const winner = writers[writes.findIndex((response) => response.status === 200)];
      control.clock.advance(1000);

      const reads = await Promise.all(writers.map((writer) => read(writer % 2 === 0 ? a.token : b.token, 'crowd')));
      reads.forEach((response, writer) => {
        expectStatus(response, 200);
        assert.deepEqual(response.body.messages, writer % 2 === 0 ? [{ by: 'a' }, { by: `a${winner}` }] : [{ by: 'b' }], `read ${writer}`);
      });
      // Writers of different sessions of both agents, all at once (each agent holds SESSIONS_MAX_PER_AGENT = 3).
      const own = [a, b].flatMap((agent, owner) => [0, 1].map((n) => ({ token: agent.token, id: `own-${n}`, n: owner * 10 + n })));
      (await Promise.all(own.map(({ token, id, n }) => append(token, id, 0, [turn(n)])))).forEach((response) => expectStatus(response, 200));
      control.clock.advance(1000);
      const next = await Promise.all(own.map(({ token, id, n }) => append(token, id, 1, [turn(n + 100)])));
      next.forEach((response) => assert.equal(response.body.version, 2, JSON.stringify(response.body)));
      const mine = await Promise.all(own.map(({ token, id }) => read(token, id)));
      mine.forEach((response, k) => assert.deepEqual(response.body.messages, [turn(own[k]!.n), turn(own[k]!.n + 100)]));
    });

    it('replaces every message with PUT, to fewer or none, or creates with expected version 0', async () => {
      const { owner, agent, token } = await agentWithToken();
      const made = await replace(token, 'conv-1', 0, [turn(0), turn(1), turn(2), turn(3)]);
      expectStatus(made, 200);
      assert.equal(made.body.version, 1);
      const trimmed = await replace(token, 'conv-1', 1, [turn(2), turn(3)]);
      assert.equal(trimmed.body.version, 2);
      assert.equal(trimmed.body.size_bytes, Buffer.byteLength(JSON.stringify([turn(2), turn(3)])));
      assert.deepEqual((await read(token, 'conv-1')).body.messages, [turn(2), turn(3)]);
      const listed = await control.request('GET', `/agents/${agent.id}/sessions`, { token: owner.token });
      assert.equal(listed.body.sessions[0].message_count, 2);

      const emptied = await replace(token, 'conv-1', 2, []);
      assert.equal(emptied.body.size_bytes, 2);
      assert.deepEqual((await read(token, 'conv-1')).body.messages, []);
      expectStatus(await append(token, 'conv-1', 3, [turn(4)]), 200);
      assert.deepEqual((await read(token, 'conv-1')).body.messages, [turn(4)]);
    });

    it('deletes a session: 204, then 404; the id then starts over at version 0', async () => {
      const { token } = await agentWithToken();
      expectStatus(await append(token, 'conv-1', 0, [turn(0)]), 200);
      expectStatus(await append(token, 'conv-1', 1, [turn(1)]), 200);
      const deleted = await call('DELETE', '/sessions/conv-1', { token });
      assert.equal(deleted.status, 204);
      assert.equal(deleted.body, undefined);
      expectError(await read(token, 'conv-1'), 404, 'SESSION_NOT_FOUND');
      expectError(await call('DELETE', '/sessions/conv-1', { token }), 404, 'SESSION_NOT_FOUND');
      const again = await append(token, 'conv-1', 0, [turn(5)]);
      assert.equal(again.body.version, 1);
      assert.deepEqual((await read(token, 'conv-1')).body.messages, [turn(5)]);
    });

    it('answers a GET naming the session it holds (If-None-Match: the ETag of its last read or write) with 304 and no messages, as a use; after any write, or under a new session of the id, with 200', async () => {
      const { agent, token } = await agentWithToken();
      const readHolding = (etag: string) => call('GET', '/sessions/conv-1', { token, ifNoneMatch: etag });
      const created = await append(token, 'conv-1', 0, [turn(0)]);
      expectStatus(created, 200);
      const firstTag = created.headers.get('etag')!;
      assert.match(firstTag, /^"1\.\d+"$/);
      const full = await read(token, 'conv-1');
      expectStatus(full, 200);
      assert.equal(full.headers.get('etag'), firstTag, 'a read of the same session and version has the same tag');

      const usedBefore = (await control.db('agent_sessions').where({ agent_id: agent.id }).first()).last_used_at;
      control.clock.advance(5_000);
      const unchanged = await readHolding(firstTag);
      assert.equal(unchanged.status, 304);
      assert.equal(unchanged.body, undefined);
      assert.equal(unchanged.headers.get('etag'), firstTag);
      assert.equal((await readHolding(`W/${firstTag}`)).status, 304, 'If-None-Match compares weakly');
      const usedAfter = (await control.db('agent_sessions').where({ agent_id: agent.id }).first()).last_used_at;
      assert.equal(usedAfter.getTime() - usedBefore.getTime(), 5_000, 'a 304 is a use: the expiry moves');
      // Last uses are kept to the second: a read within one of the last use writes nothing.
      const rowVersion = async () => (await control.db.raw('SELECT xmin::text AS xmin FROM agent_sessions WHERE agent_id = ?', [agent.id])).rows[0].xmin;
      const versionBefore = await rowVersion();
      control.clock.advance(999);
      assert.equal((await readHolding(firstTag)).status, 304);
      assert.equal(await rowVersion(), versionBefore, 'a read 999 ms after the last use wrote the row');
      assert.equal((await control.db('agent_sessions').where({ agent_id: agent.id }).first()).last_used_at.getTime(), usedAfter.getTime());
      control.clock.advance(1);
      assert.equal((await readHolding(firstTag)).status, 304);
      assert.equal((await control.db('agent_sessions').where({ agent_id: agent.id }).first()).last_used_at.getTime() - usedAfter.getTime(), 1_000, 'a read a second after the last use moves it');

      const appended = await append(token, 'conv-1', 1, [turn(1)]);
      expectStatus(appended, 200);
      const changed = await readHolding(firstTag);
      expectStatus(changed, 200);
      assert.deepEqual(changed.body.messages, [turn(0), turn(1)]);
      assert.equal(changed.headers.get('etag'), appended.headers.get('etag'));
      for (const other of ['*', `${firstTag}, ${appended.headers.get('etag')}`, '"2"', 'garbage']) {
        assert.equal((await readHolding(other)).status, 200, `If-None-Match: ${other} gets the messages`);
      }

      // A session deleted and started again under its id is at version 1 again: its tag still differs.
      expectStatus(await call('DELETE', '/sessions/conv-1', { token }), 204);
      control.clock.advance(1_000);
      expectStatus(await append(token, 'conv-1', 0, [turn(7)]), 200);
      const anew = await readHolding(firstTag);
      expectStatus(anew, 200);
      assert.deepEqual(anew.body.messages, [turn(7)]);
      assert.notEqual(anew.headers.get('etag'), firstTag);
    });

    it('plans a read and an append once per connection, not on every call: Postgres keeps one plan for a lone call', async () => {
      const { agent } = await agentWithToken();
      // One connection, so that every call meets the same server session and the statements prepared there.
      const db = connectDatabase(control.config.databaseUrl, { min: 0, max: 1 });
      try {
        const service = new AgentSessionService({ ...serviceDependencies(), db });
        let written = await service.append(agent.id, 'planned', 0, [turn(0)]);
        const { created_at: createdAt } = await db('agent_sessions').where({ agent_id: agent.id, session_id: 'planned' }).first();
        for (let n = 1; n <= 10; n += 1) {
          const read = await service.get(agent.id, 'planned', { version: written.version, createdAt });
          assert.ok('unchanged' in read, `read ${n} met the version it named`);
          written = await service.append(agent.id, 'planned', written.version, [turn(n)]);
        }
        // Postgres plans for the values five times (plancache.c, choose_custom_plan), then keeps one plan if it costs no more.
        const plans = await db.raw<{ rows: { name: string; generic_plans: string; custom_plans: string }[] }>(
          "SELECT name, generic_plans, custom_plans FROM pg_prepared_statements WHERE name LIKE 'agent_sessions_%' ORDER BY name",
        );
        assert.deepEqual(
          plans.rows.map((row) => [row.name, Number(row.custom_plans), Number(row.generic_plans)]),
          [
            ['agent_sessions_append_each_at_version', 5, 5],
            ['agent_sessions_touch_and_read_each', 5, 5],
          ],
        );
      } finally {
        await db.destroy();
      }
    });

    it('refuses messages nested too deeply to store with 422 at ["body", "messages"], not a 500, and writes nothing', async () => {
      const { token } = await agentWithToken();
      const deep = `${'['.repeat(30_000)}${']'.repeat(30_000)}`;
      const body = (version: number) => `{"expected_version":${version},"messages":[${deep}]}`;
      expectError(await call('POST', '/sessions/deep/messages', { token, rawBody: body(0) }), 422, 'VALIDATION_ERROR', ['body', 'messages']);
      expectError(await call('PUT', '/sessions/deep', { token, rawBody: body(0) }), 422, 'VALIDATION_ERROR', ['body', 'messages']);
      expectError(await read(token, 'deep'), 404, 'SESSION_NOT_FOUND');
    });

    it('validates the session id and the body: 422 VALIDATION_ERROR at the field', async () => {
      const { token } = await agentWithToken();
      expectError(await read(token, 'has space'), 422, 'VALIDATION_ERROR', ['path', 'session_id']);
      expectError(await read(token, 'x'.repeat(129)), 422, 'VALIDATION_ERROR', ['path', 'session_id']);
      expectError(await append(token, 'a%2Fb', 0, [turn(0)]), 422, 'VALIDATION_ERROR', ['path', 'session_id']);
      // `.` and `..` are path steps to a URL parser (fetch sends neither as an id); sent raw, encoded, they are refused.
      for (const step of ['%2E', '%2E%2E']) {
        const raw = await rawGet(`/v1/sessions/${step}`, token);
        assert.equal(raw.status, 422, raw.text);
        assert.deepEqual(JSON.parse(raw.text).details.errors[0].loc, ['path', 'session_id']);
      }
      // Encoded as a client's encodeURIComponent encodes it, `:` arrives as itself.
      expectStatus(await append(token, encodeURIComponent('conv:1'), 0, [turn(0)]), 200);
      expectStatus(await read(token, 'conv:1'), 200);
      expectError(await append(token, 'conv-1', 0, []), 422, 'VALIDATION_ERROR', ['body', 'messages']);
      expectError(await append(token, 'conv-1', 0, Array.from({ length: 1001 }, () => 1)), 422, 'VALIDATION_ERROR', ['body', 'messages']);
      expectError(await append(token, 'conv-1', -1, [turn(0)]), 422, 'VALIDATION_ERROR', ['body', 'expected_version']);
      expectError(await call('POST', '/sessions/conv-1/messages', { token, body: { messages: [turn(0)] } }), 422, 'VALIDATION_ERROR', ['body', 'expected_version']);
      expectError(await call('POST', '/sessions/conv-1/messages', { token, body: { expected_version: 0, messages: [1], extra: true } }), 422, 'VALIDATION_ERROR', ['body', 'extra']);
      expectError(await call('POST', '/sessions/conv-1/messages', { token, rawBody: '{"expected_version": 0, "messages": [' }), 422, 'VALIDATION_ERROR', ['body']);
      expectError(await read(token, 'conv-1'), 404, 'SESSION_NOT_FOUND');
    });
  });

  describe('limits', () => {
    /** Messages whose JSON array takes exactly `bytes` bytes: one string padded to fit. */
    const messagesOf = (bytes: number) => ['x'.repeat(bytes - '[""]'.length)];

    it(`refuses a write past SESSION_MAX_BYTES with 413 SESSION_TOO_LARGE and writes nothing; exactly the limit is fine`, async () => {
      const { token } = await agentWithToken();
      const full = await replace(token, 'conv-1', 0, messagesOf(MAX_BYTES));
      expectStatus(full, 200);
      assert.equal(full.body.size_bytes, MAX_BYTES);
      const over = await append(token, 'conv-1', 1, [1]);
      expectError(over, 413, 'SESSION_TOO_LARGE');
      assert.equal(over.body.details.max_bytes, MAX_BYTES);
      assert.equal(over.body.details.size_bytes, MAX_BYTES + 2);
      expectError(await replace(token, 'conv-1', 1, messagesOf(MAX_BYTES + 1)), 413, 'SESSION_TOO_LARGE');
      expectError(await replace(token, 'conv-2', 0, messagesOf(MAX_BYTES + 1)), 413, 'SESSION_TOO_LARGE');

      const kept = await read(token, 'conv-1');
      assert.equal(kept.body.version, 1);
      assert.deepEqual(kept.body.messages, messagesOf(MAX_BYTES));
      expectError(await read(token, 'conv-2'), 404, 'SESSION_NOT_FOUND');
      // Trimmed to fit (the runtime drops the oldest turns), the session takes writes again.
      expectStatus(await replace(token, 'conv-1', 1, messagesOf(MAX_BYTES / 2)), 200);
      expectStatus(await append(token, 'conv-1', 2, [1]), 200);
    });

    it('refuses a body far past SESSION_MAX_BYTES with 413 before parsing it', async () => {
      const { token } = await agentWithToken();
      // Not even JSON: a 422 would mean it was read whole and parsed.
      const huge = `{${'x'.repeat(MAX_BYTES + 128 * 1024)}`;
      expectError(await call('POST', '/sessions/conv-1/messages', { token, rawBody: huge }), 413, 'SESSION_TOO_LARGE');
      expectError(await call('PUT', '/sessions/conv-1', { token, rawBody: huge }), 413, 'SESSION_TOO_LARGE');
    });

    it('refuses reads past SESSION_READS_PER_SECOND with 429 SESSION_RATE_LIMITED, per agent, apart from writes, until the next second', async () => {
      const { token } = await agentWithToken();
      const other = await agentWithToken();
      control.clock.set(new Date(Math.ceil(control.clock.now().getTime() / 1000) * 1000 + 100)); // early in a second
      expectStatus(await append(token, 'conv-1', 0, [turn(0)]), 200);
      expectStatus(await append(other.token, 'conv-1', 0, [turn(0)]), 200);
      // A flood of reads at once, as code in a replica could send: exactly the limit is served.
      const flood = await Promise.all(Array.from({ length: READS_PER_SECOND + 20 }, () => read(token, 'conv-1')));
      assert.equal(flood.filter((response) => response.status === 200).length, READS_PER_SECOND);
      const refused = flood.filter((response) => response.status !== 200);
      for (const response of refused) expectError(response, 429, 'SESSION_RATE_LIMITED');
      assert.equal(refused[0]!.headers.get('retry-after'), '1');
      // Writes are counted apart, and another agent reads as usual.
      expectStatus(await append(token, 'conv-1', 1, [turn(1)]), 200);
      expectStatus(await read(other.token, 'conv-1'), 200);
      control.clock.advance(1000);
      assert.equal((await read(token, 'conv-1')).body.version, 2);
    });

    it('refuses writes past SESSION_WRITES_PER_SECOND with 429 SESSION_RATE_LIMITED and Retry-After, per agent, until the next second', async () => {
      const { token } = await agentWithToken();
      const other = await agentWithToken();
      control.clock.set(new Date(Math.ceil(control.clock.now().getTime() / 1000) * 1000 + 100)); // early in a second
      for (let version = 0; version < WRITES_PER_SECOND; version += 1) expectStatus(await append(token, 'conv-1', version, [turn(version)]), 200);
      const limited = await append(token, 'conv-1', WRITES_PER_SECOND, [turn(99)]);
      expectError(limited, 429, 'SESSION_RATE_LIMITED');
      assert.equal(limited.headers.get('retry-after'), '1');
      assert.equal(limited.body.details.retry_after, 1);
      expectError(await call('DELETE', '/sessions/conv-1', { token }), 429, 'SESSION_RATE_LIMITED');
      // Reads are not counted, and the refused writes wrote nothing; another agent writes as usual.
      const seen = await read(token, 'conv-1');
      assert.equal(seen.body.version, WRITES_PER_SECOND);
      assert.equal(seen.body.messages.length, WRITES_PER_SECOND);
      expectStatus(await append(other.token, 'conv-1', 0, [turn(0)]), 200);

      control.clock.advance(1000);
      expectStatus(await append(token, 'conv-1', WRITES_PER_SECOND, [turn(10)]), 200);
    });

    it('evicts the least recently used session when a write creates one past SESSIONS_MAX_PER_AGENT', async () => {
      const { agent, token } = await agentWithToken();
      const other = await agentWithToken();
      expectStatus(await append(other.token, 'old', 0, [turn(0)]), 200);
      for (const id of ['s1', 's2', 's3']) {
        control.clock.advance(1000);
        expectStatus(await append(token, id, 0, [turn(0)]), 200);
      }
      control.clock.advance(1000);
      expectStatus(await read(token, 's1'), 200); // s1 is used again: s2 is now the least recently used
      control.clock.advance(1000);
      expectStatus(await append(token, 's3', 1, [turn(1)]), 200); // a write to an existing session evicts nothing
      assert.equal((await control.db('agent_sessions').where({ agent_id: agent.id })).length, MAX_PER_AGENT);

      control.clock.advance(1000);
      expectStatus(await append(token, 's4', 0, [turn(0)]), 200);
      expectError(await read(token, 's2'), 404, 'SESSION_NOT_FOUND');
      for (const id of ['s1', 's3', 's4']) expectStatus(await read(token, id), 200);
      assert.equal((await control.db('agent_sessions').where({ agent_id: agent.id })).length, MAX_PER_AGENT);
      expectStatus(await read(other.token, 'old'), 200);
    });

    it('keeps SESSIONS_MAX_PER_AGENT exact when many sessions are created at once, never evicting one just created', async () => {
      const { agent, token } = await agentWithToken();
      control.clock.advance(1000); // a write window of its own
      const ids = Array.from({ length: 8 }, (_, i) => `burst-${i}`);
      const created = await Promise.all(ids.map((id) => append(token, id, 0, [turn(0)])));
      created.forEach((response) => expectStatus(response, 200));
      const kept = (await control.db('agent_sessions').where({ agent_id: agent.id })).map((row: { session_id: string }) => row.session_id);
      assert.equal(kept.length, MAX_PER_AGENT, `kept ${kept.join(', ')}`);

      // Used at the same instant as all the others and first by id, so first in line to go, the session just created stays.
      expectStatus(await append(token, 'a-first-by-id', 0, [turn(0)]), 200);
      expectStatus(await read(token, 'a-first-by-id'), 200);
      assert.equal((await control.db('agent_sessions').where({ agent_id: agent.id })).length, MAX_PER_AGENT);
    });
  });

  /** What the service is built with, its limiter never waiting on Redis. */
  const serviceDependencies = () => ({
    db: control.db,
    box: new SecretBox(control.config.masterKeys),
    clock: control.clock,
    limiter: { hit: async () => ({ allowed: true, retryAfterSeconds: 1 }) } as unknown as LeasedWindowLimiter,
    limits: control.config.agentServices.sessions,
  });
  /** The service itself: calls made together reach its statement batches in one tick. */
  const serviceInOneTick = () => new AgentSessionService(serviceDependencies());

  describe('several calls in one request (POST /v1/batch)', () => {
    interface BatchCall {
      method: string;
      path: string;
      headers?: Record<string, string>;
      body?: unknown;
    }
    /** A batch, and each of its results as a response of its own, for the same checks as a call alone. */
    async function batch(token: string, calls: BatchCall[]): Promise<ApiResponse[]> {
      const response = await call('POST', '/batch', { token, body: { calls } });
      expectStatus(response, 200);
      assert.equal(response.body.results.length, calls.length);
      return response.body.results.map((result: { status: number; headers: Record<string, string>; body?: unknown }) => ({ status: result.status, body: result.body, headers: new Headers(result.headers) }));
    }
    const write = (id: string, expected_version: number, messages: unknown[]): BatchCall => ({ method: 'POST', path: `/sessions/${id}/messages`, body: { expected_version, messages } });

    it('answers each call as it would have been answered alone, in the order of the calls', async () => {
      const { token } = await agentWithToken();
      control.clock.advance(1000);
      const [first, second, encoded] = await batch(token, [write('conv-1', 0, [turn(0)]), write('conv-2', 0, [turn(0)]), write(encodeURIComponent('team:7'), 0, [turn(0)])]);
      expectStatus(first!, 200);
      assert.deepEqual([first!.body.session_id, first!.body.version, second!.body.session_id], ['conv-1', 1, 'conv-2']);
      assert.equal(encoded!.body.session_id, 'team:7', 'the path is decoded as a URL path is');
      assert.match(first!.headers.get('etag') ?? '', /^"1\.\d+"$/);
      control.clock.advance(1000);

      const [unchanged, whole, appended, conflict, missing, badId, badBody, notSessions, nested, wrongMethod] = await batch(token, [
        { method: 'GET', path: '/sessions/conv-1', headers: { 'if-none-match': first!.headers.get('etag')! } },
        { method: 'GET', path: '/sessions/conv-2' },
        // Not conv-1, which the first call reads: calls of a batch run in no order.
        write(encodeURIComponent('team:7'), 1, [turn(1)]),
        write('conv-2', 5, [turn(1)]),
        { method: 'GET', path: '/sessions/conv-9' },
        { method: 'GET', path: `/sessions/${encodeURIComponent('no spaces')}` },
        { method: 'POST', path: '/sessions/conv-2/messages', body: { expected_version: 1 } },
        { method: 'POST', path: '/traces', body: {} },
        { method: 'POST', path: '/batch', body: { calls: [] } },
        { method: 'PATCH', path: '/sessions/conv-1' },
      ]);
      assert.equal(unchanged!.status, 304);
      assert.equal(unchanged!.body, undefined, 'a 304 carries no body');
      assert.equal(unchanged!.headers.get('etag'), first!.headers.get('etag'));
      expectStatus(whole!, 200);
      assert.deepEqual(whole!.body.messages, [turn(0)]);
      assert.equal(whole!.headers.get('etag'), second!.headers.get('etag'));
      assert.equal(appended!.body.version, 2);
      expectError(conflict!, 409, 'SESSION_VERSION_CONFLICT');
      assert.equal(conflict!.body.details.current_version, 1);
      expectError(missing!, 404, 'SESSION_NOT_FOUND');
      expectError(badId!, 422, 'VALIDATION_ERROR', ['path', 'session_id']);
      expectError(badBody!, 422, 'VALIDATION_ERROR', ['body', 'messages']);
      expectError(notSessions!, 404, 'NOT_FOUND');
      expectError(nested!, 404, 'NOT_FOUND');
      expectError(wrongMethod!, 405, 'METHOD_NOT_ALLOWED');
      // A path is matched as the router matches it alone, trailing slash and all.
      const alone = await call('GET', '/sessions/conv-2/', { token });
      const [slashed] = await batch(token, [{ method: 'GET', path: '/sessions/conv-2/' }]);
      assert.deepEqual([slashed!.status, slashed!.body.messages], [alone.status, alone.body.messages]);
      // What the batch wrote is what a call alone reads.
      assert.deepEqual((await read(token, 'team:7')).body.messages, [turn(0), turn(1)]);
      assert.deepEqual((await read(token, 'conv-1')).body.messages, [turn(0)]);
      assert.equal((await read(token, 'conv-2')).body.version, 1);
    });

    it('creates the sessions of one batch together as each would be created alone: a second creation of an id, or one of a live id, is 409; an expired id starts anew', async () => {
      const { token } = await agentWithToken({ deploy: { session_ttl_seconds: 60 } });
      control.clock.advance(1000);
      expectStatus(await append(token, 'lives', 0, [turn(0)]), 200);
      expectStatus(await append(token, 'lives', 1, [turn(1)]), 200);
      const expired = await append(token, 'expired', 0, [turn(0)]);
      control.clock.advance(45_000);
      expectStatus(await read(token, 'lives'), 200); // used again: lives on past 'expired'
      control.clock.advance(30_000);
      const [one, other, live, anew] = await batch(token, [write('new-1', 0, [turn(10)]), write('new-1', 0, [turn(11)]), write('lives', 0, [turn(12)]), write('expired', 0, [turn(13)])]);
      // The calls of a batch run in no order: either creation of new-1 may be the one that applies.
      const winner = one!.status === 200 ? 0 : 1;
      expectStatus([one, other][winner]!, 200);
      const again = [one, other][1 - winner]!;
      expectError(again, 409, 'SESSION_VERSION_CONFLICT');
      assert.equal(again.body.details.current_version, 1);
      expectError(live!, 409, 'SESSION_VERSION_CONFLICT');
      assert.equal(live!.body.details.current_version, 2);
      expectStatus(anew!, 200);
      assert.notEqual(anew!.headers.get('etag'), expired.headers.get('etag'), 'a new session in place of the expired one');
      assert.deepEqual((await read(token, 'new-1')).body.messages, [turn(10 + winner)]);
      assert.deepEqual((await read(token, 'expired')).body.messages, [turn(13)]);
      assert.deepEqual((await read(token, 'lives')).body.messages, [turn(0), turn(1)]);
    });

    it('creates sessions asked for at once in one transaction per agent, each as if alone: a second creation of an id is 409, an agent gone fails only its own, the count stays exact', async () => {
      const [a, b, c] = [await agentWithToken(), await agentWithToken(), await agentWithToken()];
      // Every creation below is made in one tick, and so grouped.
      const service = serviceInOneTick();
      const outcomes = await Promise.allSettled([
        service.append(a.agent.id, 'same', 0, [{ by: 'a1' }]),
        service.append(a.agent.id, 'same', 0, [{ by: 'a2' }]),
        service.append(b.agent.id, 'same', 0, [{ by: 'b' }]),
        service.append('agt_neverExisted0000000', 'same', 0, [{ by: 'nobody' }]),
        ...Array.from({ length: MAX_PER_AGENT + 2 }, (_, n) => service.append(c.agent.id, `c-${n}`, 0, [{ by: `c${n}` }])),
      ]);
      const [first, second, ofB, ofNobody, ...ofC] = outcomes;
      assert.equal(first!.status, 'fulfilled');
      assert.equal(second!.status, 'rejected');
      assert.equal((second as PromiseRejectedResult).reason.code, 'SESSION_VERSION_CONFLICT');
      assert.equal((second as PromiseRejectedResult).reason.details.current_version, 1);
      assert.equal(ofB!.status, 'fulfilled', 'another agent\'s session of the same id is its own');
      assert.equal((ofNobody as PromiseRejectedResult).reason.code, 'UNAUTHENTICATED');
      assert.ok(ofC.every((outcome) => outcome.status === 'fulfilled'));
      assert.deepEqual((await read(a.token, 'same')).body.messages, [{ by: 'a1' }]);
      assert.deepEqual((await read(b.token, 'same')).body.messages, [{ by: 'b' }]);
      assert.equal((await control.db('agent_sessions').where({ agent_id: c.agent.id })).length, MAX_PER_AGENT);
    });

    it('keeps SESSIONS_MAX_PER_AGENT exact when copies of the control API create sessions of one agent at the same moment', async () => {
      const { agent } = await agentWithToken();
      // Each copy creates in a transaction of its own, all begun together: the agent's creation turn is what orders them.
      const copies = Array.from({ length: 4 }, () => serviceInOneTick());
      for (let round = 0; round < 3; round += 1) {
        const outcomes = await Promise.allSettled(
          copies.flatMap((copy, c) => Array.from({ length: MAX_PER_AGENT }, (_, n) => copy.append(agent.id, `r${round}-c${c}-${n}`, 0, [{ n }]))),
        );
        assert.ok(outcomes.every((outcome) => outcome.status === 'fulfilled'));
        assert.equal((await control.db('agent_sessions').where({ agent_id: agent.id })).length, MAX_PER_AGENT, `round ${round}`);
      }
    });

    it("keeps it exact too on a database whose default isolation is REPEATABLE READ: the platform's transactions say READ COMMITTED", async () => {
      const { agent } = await agentWithToken();
      await control.db.raw(`ALTER DATABASE ${control.database} SET default_transaction_isolation = 'repeatable read'`);
      // A pool of its own: the setting applies to connections opened after it.
      const db = connectDatabase(control.config.databaseUrl, { min: 0, max: 8 });
      try {
        assert.equal((await db.raw('SHOW default_transaction_isolation')).rows[0].default_transaction_isolation, 'repeatable read');
        const copies = Array.from({ length: 4 }, () => new AgentSessionService({ ...serviceDependencies(), db }));
        for (let round = 0; round < 3; round += 1) {
          const outcomes = await Promise.allSettled(
            copies.flatMap((copy, c) => Array.from({ length: MAX_PER_AGENT }, (_, n) => copy.append(agent.id, `rr${round}-c${c}-${n}`, 0, [{ n }]))),
          );
          assert.deepEqual(outcomes.filter((outcome) => outcome.status === 'rejected').map((outcome) => String((outcome as PromiseRejectedResult).reason)), []);
          assert.equal((await db('agent_sessions').where({ agent_id: agent.id })).length, MAX_PER_AGENT, `round ${round}`);
        }
      } finally {
        await db.destroy();
        await control.db.raw(`ALTER DATABASE ${control.database} RESET default_transaction_isolation`);
      }
    });

    it('answers a creation whose id was taken, then deleted before it could be looked at, with 409 at version 0, for the writer to read again', async () => {
      const { agent } = await agentWithToken();
      const service = serviceInOneTick();
      await service.append(agent.id, 'fleeting', 0, [{ n: 0 }]);
      const insert = AgentSessionRepository.prototype.insertEachCountingOthers;
      AgentSessionRepository.prototype.insertEachCountingOthers = async function (this: AgentSessionRepository, rows) {
        const counted = await insert.call(this, rows);
        // Its owner deletes it meanwhile, on a connection of its own: the insert that met it took no lock on it.
        await control.db('agent_sessions').where({ agent_id: agent.id, session_id: 'fleeting' }).delete();
        return counted;
      };
      const again = await service.append(agent.id, 'fleeting', 0, [{ n: 1 }]).then(
        () => assert.fail('created over a session it had met'),
        (error: { code: string; details: { current_version: number } }) => error,
      ).finally(() => {
        AgentSessionRepository.prototype.insertEachCountingOthers = insert;
      });
      assert.equal(again.code, 'SESSION_VERSION_CONFLICT');
      assert.equal(again.details.current_version, 0);
      await service.append(agent.id, 'fleeting', 0, [{ n: 2 }]);
      assert.equal((await service.get(agent.id, 'fleeting') as { messagesJson: string }).messagesJson, '[{"n":2}]');
    });

    it('answers reads made at once each as alone: a live session, a missing or expired id (404), and an agent gone (401)', async () => {
      const { agent } = await agentWithToken({ deploy: { session_ttl_seconds: 60 } });
      const service = serviceInOneTick();
      await service.append(agent.id, 'expires', 0, [{ n: 0 }]);
      control.clock.advance(61_000);
      await service.append(agent.id, 'lives', 0, [{ n: 1 }]);
      // The batched read is prepared and sent past knex; any other look at the database goes through it.
      const readBatches: number[] = [];
      const batchedRead = AgentSessionRepository.prototype.touchAndReadEach;
      AgentSessionRepository.prototype.touchAndReadEach = function (this: AgentSessionRepository, reads, ...rest) {
        readBatches.push(reads.length);
        return batchedRead.call(this, reads, ...rest);
      };
      const otherQueries: string[] = [];
      const onQuery = (query: { sql: string }) => otherQueries.push(query.sql);
      control.db.on('query', onQuery);
      // Made in one tick, so they go to Postgres as one statement.
      const [live, missing, expired, ofNobody] = await Promise.allSettled([
        service.get(agent.id, 'lives'),
        service.get(agent.id, 'never-written'),
        service.get(agent.id, 'expires'),
        service.get('agt_neverExisted0000000', 'lives'),
      ]).finally(() => {
        AgentSessionRepository.prototype.touchAndReadEach = batchedRead;
        control.db.removeListener('query', onQuery);
      });
      assert.equal(live.status, 'fulfilled');
      assert.equal((live as PromiseFulfilledResult<{ messagesJson?: string }>).value.messagesJson, '[{"n":1}]');
      assert.equal((missing as PromiseRejectedResult).reason.code, 'SESSION_NOT_FOUND');
      assert.equal((expired as PromiseRejectedResult).reason.code, 'SESSION_NOT_FOUND');
      assert.equal((ofNobody as PromiseRejectedResult).reason.code, 'UNAUTHENTICATED');
      assert.deepEqual(readBatches, [4], 'one statement read all four');
      assert.deepEqual(otherQueries, [], 'and nothing looked at the agent after it');
    });

    it("scopes every call to the request's token: another agent's session of the same id is neither read nor written", async () => {
      const a = await agentWithToken();
      const b = await agentWithToken();
      expectStatus(await append(b.token, 'shared-name', 0, [{ secret: 'of b' }]), 200);
      const [readOther, writeOther, deleteOther] = await batch(a.token, [
        { method: 'GET', path: '/sessions/shared-name' },
        write('shared-name', 1, [{ by: 'a' }]),
        { method: 'DELETE', path: '/sessions/shared-name' },
      ]);
      expectError(readOther!, 404, 'SESSION_NOT_FOUND');
      expectError(writeOther!, 409, 'SESSION_VERSION_CONFLICT');
      assert.equal(writeOther!.body.details.current_version, 0);
      expectError(deleteOther!, 404, 'SESSION_NOT_FOUND');
      assert.deepEqual((await read(b.token, 'shared-name')).body.messages, [{ secret: 'of b' }]);
    });

    it('refuses the whole request without a valid token (401), with a malformed envelope (422) or a body past the limit (413)', async () => {
      const { token } = await agentWithToken();
      const calls = [{ method: 'GET', path: '/sessions/conv-1' }];
      expectError(await call('POST', '/batch', { body: { calls } }), 401, 'UNAUTHENTICATED');
      expectError(await call('POST', '/batch', { token: 'ast1.forged', body: { calls } }), 401, 'UNAUTHENTICATED');
      expectError(await call('POST', '/batch', { token, body: { calls: [] } }), 422, 'VALIDATION_ERROR', ['body', 'calls']);
      expectError(await call('POST', '/batch', { token, body: { calls: Array.from({ length: 101 }, () => calls[0]) } }), 422, 'VALIDATION_ERROR', ['body', 'calls']);
      expectError(await call('POST', '/batch', { token, body: { calls, also: 1 } }), 422, 'VALIDATION_ERROR');
      expectError(await call('POST', '/batch', { token, body: { calls: [{ path: '/sessions/conv-1' }] } }), 422, 'VALIDATION_ERROR', ['body', 'calls', 0, 'method']);
      expectError(await call('POST', '/batch', { token }), 422, 'VALIDATION_ERROR', ['body', 'calls']);
      const huge = JSON.stringify({ calls: [write('conv-1', 0, ['x'.repeat(MAX_BYTES + 70 * 1024)])] });
      expectError(await call('POST', '/batch', { token, rawBody: huge }), 413, 'SESSION_TOO_LARGE');
      expectError(await call('GET', '/batch', { token }), 405, 'METHOD_NOT_ALLOWED');
    });

    it('counts each call against the rates as if it came alone: calls past SESSION_READS_PER_SECOND are 429 with retry-after', async () => {
      const { token } = await agentWithToken();
      control.clock.set(new Date(Math.ceil(control.clock.now().getTime() / 1000) * 1000 + 100)); // early in a second
      expectStatus(await append(token, 'conv-1', 0, [turn(0)]), 200);
      const results = await batch(token, Array.from({ length: READS_PER_SECOND + 5 }, () => ({ method: 'GET', path: '/sessions/conv-1' })));
      assert.equal(results.filter((result) => result.status === 200).length, READS_PER_SECOND);
      const refused = results.filter((result) => result.status !== 200);
      assert.equal(refused.length, 5);
      for (const result of refused) expectError(result, 429, 'SESSION_RATE_LIMITED');
      assert.equal(refused[0]!.headers.get('retry-after'), '1');
      control.clock.advance(1000);
    });

    it('answers a read past SESSION_MAX_BYTES of other sessions in the same answer with 503 BATCH_ANSWER_FULL, which a read alone then serves', async () => {
      const { token } = await agentWithToken();
      const large = (n: number) => [{ role: 'user', content: `${n}`.repeat(MAX_BYTES * 0.7) }];
      control.clock.advance(1000);
      for (const n of [1, 2, 3]) expectStatus(await append(token, `big-${n}`, 0, large(n)), 200);
      control.clock.advance(1000);
      const results = await batch(token, [1, 2, 3].map((n) => ({ method: 'GET', path: `/sessions/big-${n}` })));
      // One session, and the next within SESSION_MAX_BYTES; the reads run at once, so which ones is theirs to decide.
      const served = results.flatMap((result, index) => (result.status === 200 ? [index + 1] : []));
      assert.equal(served.length, 2, JSON.stringify(results.map((result) => result.status)));
      for (const n of served) assert.deepEqual(results[n - 1]!.body.messages, large(n));
      const full = [1, 2, 3].find((n) => !served.includes(n))!;
      expectError(results[full - 1]!, 503, 'BATCH_ANSWER_FULL');
      assert.deepEqual((await read(token, `big-${full}`)).body.messages, large(full));
    });
  });

  describe("the default runtime's client (batched calls) against this endpoint", () => {
    // Limits of their own: eight conversations at once, each turn's calls in one second.
    let roomy: TestControl;
    before(async () => {
      roomy = await startControl({ SESSION_MAX_BYTES: String(MAX_BYTES) });
    });
    after(async () => roomy?.close());

    it('keeps conversations served at once in batches, each turn once and in order', async () => {
      const owner = await roomy.signUp();
      const agent = await createAgent(roomy, owner.token);
      const token = roomy.mintAgentToken(agent.id);
      const sent: string[] = [];
      const transport = new AgentServicesTransport({ baseUrl: roomy.agentServicesUrl, token: { current: async () => token, reload: async () => token } });
      const counted: AgentServicesCalls = {
        request: (method, path, body, headers, earlier) => {
          sent.push(`${method} ${path}${path === '/v1/batch' ? ` ${(body as { calls: unknown[] }).calls.length}` : ''}`);
          return transport.request(method, path, body, headers, earlier);
        },
      };
      const store = new RemoteSessionStore<{ role: string; content: string }>(
        new SessionsApiClient(new BatchedCalls(counted)),
        { maxBytes: MAX_BYTES, maxTurns: 100, writeAttempts: 3, startsTurn: (message) => message.role === 'user' },
        createJsonLogger(() => {}, 'error'),
      );
      const conversations = Array.from({ length: 8 }, (_, n) => `talk-${n}`);
      try {
        for (let turnNumber = 0; turnNumber < 3; turnNumber += 1) {
          roomy.clock.advance(1000);
          await Promise.all(
            conversations.map(async (id) => {
              const session = await store.open(id);
              assert.equal(session.history.length, turnNumber * 2, `${id} holds every turn before ${turnNumber}`);
              await session.appendTurn([{ role: 'user', content: `${id} asks ${turnNumber}` }, { role: 'assistant', content: `${id} answers ${turnNumber}` }]);
            }),
          );
        }
      } finally {
        transport.close();
      }
      const batches = sent.filter((request) => request.startsWith('POST /v1/batch'));
      assert.ok(batches.length > 0 && sent.length < conversations.length * 3 * 2, `requests sent: ${sent.join(', ')}`);
      for (const id of conversations) {
        const stored = await roomy.db('agent_sessions').where({ agent_id: agent.id, session_id: id }).first();
        assert.equal(stored.version, 3, id);
        const answer = await fetch(`${roomy.agentServicesUrl}/v1/sessions/${id}`, { headers: { authorization: `Bearer ${token}` } });
        assert.deepEqual(((await answer.json()) as { messages: { content: string }[] }).messages.map((message: { content: string }) => message.content), [0, 1, 2].flatMap((n) => [`${id} asks ${n}`, `${id} answers ${n}`]));
      }
    });
  });

  describe("the default runtime's client meeting the read rate in a batch", () => {
    it("waits out each 429 by the retry-after of its batch result, then reads alone, as it would have alone", async () => {
      const { token } = await agentWithToken();
      control.clock.set(new Date(Math.ceil(control.clock.now().getTime() / 1000) * 1000 + 100)); // early in a second
      expectStatus(await append(token, 'conv-1', 0, [turn(0)]), 200);
      const waits: number[] = [];
      let limitedInBatches = 0;
      const transport = new AgentServicesTransport({
        baseUrl: control.agentServicesUrl,
        token: { current: async () => token, reload: async () => token },
        // The rate's window is the control API's clock: waiting moves it, so the test takes no real second.
        wait: async (ms) => {
          waits.push(ms);
          control.clock.advance(ms);
        },
      });
      const seen: AgentServicesCalls = {
        request: async (method, path, body, headers, earlier) => {
          const answer = await transport.request(method, path, body, headers, earlier);
          if (path === '/v1/batch') limitedInBatches += (answer.body as { results: { status: number }[] }).results.filter((result) => result.status === 429).length;
          return answer;
        },
      };
      const api = new SessionsApiClient(new BatchedCalls(seen));
      try {
        // Of other sessions: two calls of one session never share a batch. The calls of a batch run in no order, so which are past the rate is the server's to say.
        const reads = await Promise.all(Array.from({ length: READS_PER_SECOND + 5 }, (_, n) => api.get(n === READS_PER_SECOND + 4 ? 'conv-1' : `never-written-${n}`)));
        assert.deepEqual(reads.at(-1)!.messages, [turn(0)]);
        for (const read of reads.slice(0, -1)) assert.deepEqual(read, { version: 0, messages: [] });
      } finally {
        transport.close();
      }
      assert.ok(limitedInBatches > 0, 'some reads past the rate were answered 429 inside a batch');
      assert.deepEqual(waits, [1000, 1000, 1000, 1000, 1000], "each of the 5 reads past the rate waited its result's retry-after (1 s) once");
    });
  });

  describe('time to live', () => {
    it('keeps a session session_ttl_seconds after its last read or write, then it is gone and its id starts over', async () => {
      const { token } = await agentWithToken({ deploy: { session_ttl_seconds: 60 } });
      const written = await append(token, 'conv-1', 0, [turn(0)]);
      const start = control.clock.now().getTime();
      assert.equal(written.body.expires_at, new Date(start + 60_000).toISOString());

      control.clock.advance(50_000);
      const readLater = await read(token, 'conv-1');
      expectStatus(readLater, 200);
      assert.equal(readLater.body.expires_at, new Date(start + 110_000).toISOString(), 'a read moves the expiry');
      control.clock.advance(59_000);
      expectStatus(await read(token, 'conv-1'), 200);
      control.clock.advance(60_000);
      expectError(await read(token, 'conv-1'), 404, 'SESSION_NOT_FOUND');
      const gone = await append(token, 'conv-1', 1, [turn(1)]);
      expectError(gone, 409, 'SESSION_VERSION_CONFLICT');
      assert.equal(gone.body.details.current_version, 0);
      expectError(await call('DELETE', '/sessions/conv-1', { token }), 404, 'SESSION_NOT_FOUND');

      const anew = await append(token, 'conv-1', 0, [turn(2)]);
      assert.equal(anew.body.version, 1);
      assert.deepEqual((await read(token, 'conv-1')).body.messages, [turn(2)], 'nothing of the expired session is left');
    });

    it('takes 24 hours by default, and session_ttl_seconds from 60 s to 30 days', async () => {
      const { owner, agent, token } = await agentWithToken();
      assert.equal(agent.deploy.session_ttl_seconds, 86_400);
      const written = await append(token, 'conv-1', 0, [turn(0)]);
      assert.equal(written.body.expires_at, new Date(control.clock.now().getTime() + 86_400_000).toISOString());
      for (const bad of [59, 2_592_001, 1.5]) {
        expectError(await control.request('POST', '/agents', { token: owner.token, body: { name: 'bad ttl', deploy: { session_ttl_seconds: bad } } }), 422, 'VALIDATION_ERROR', ['body', 'deploy', 'session_ttl_seconds']);
      }
      const longest = await createAgent(control, owner.token, { name: 'month', deploy: { session_ttl_seconds: 2_592_000 } });
      assert.equal(longest.deploy.session_ttl_seconds, 2_592_000);
    });

    it('sweeps expired sessions out of the database, and only those', async () => {
      const { agent, token } = await agentWithToken({ deploy: { session_ttl_seconds: 60 } });
      expectStatus(await append(token, 'expiring-1', 0, [turn(0)]), 200);
      expectStatus(await append(token, 'expiring-2', 0, [turn(0)]), 200);
      control.clock.advance(30_000);
      expectStatus(await append(token, 'kept', 0, [turn(0)]), 200);
      control.clock.advance(30_000);
      await control.control.loops.sessionSweeper.runOnce();
      const left = await control.db('agent_sessions').where({ agent_id: agent.id }).orderBy('session_id').pluck('session_id');
      assert.deepEqual(left, ['kept']);
    });
  });

  describe('at rest', () => {
    it('stores messages sealed with the master key: their text is nowhere in the database', async () => {
      const { agent, token } = await agentWithToken();
      const marker = `private-${randomBytes(8).toString('hex')}`;
      expectStatus(await append(token, 'conv-1', 0, [{ role: 'user', content: marker }]), 200);
      assert.ok(!(await databaseText(control.db)).includes(marker), 'a message is stored in the clear');
      const row = await control.db('agent_sessions').where({ agent_id: agent.id, session_id: 'conv-1' }).first();
      const box = new SecretBox(control.config.masterKeys);
      assert.ok(box.isCurrent(row.messages_sealed));
      assert.deepEqual(JSON.parse(box.open(row.messages_sealed)), [{ role: 'user', content: marker }]);
    });

    it('keeps each append as a sealed row of its own, leaving the base as it was, and folds 16 of them into the base on a read', async () => {
      const { agent, token } = await agentWithToken();
      const box = new SecretBox(control.config.masterKeys);
      const base = () => control.db('agent_sessions').where({ agent_id: agent.id, session_id: 'conv-1' }).first();
      const appends = () => control.db('agent_session_appends').where({ agent_id: agent.id, session_id: 'conv-1' }).orderBy('version');
      expectStatus(await append(token, 'conv-1', 0, [turn(0)]), 200);
      const created = (await base()).messages_sealed;
      for (let n = 1; n <= 15; n += 1) {
        control.clock.advance(200); // under SESSION_WRITES_PER_SECOND
        expectStatus(await append(token, 'conv-1', n, [turn(n)]), 200);
      }
      // An append wrote only its own turn: the base is untouched, and each row opens to one turn.
      assert.equal((await base()).messages_sealed, created);
      const rows = await appends();
      assert.deepEqual(rows.map((row) => row.version), Array.from({ length: 15 }, (_, i) => i + 2));
      assert.deepEqual(rows.map((row) => JSON.parse(box.open(row.messages_sealed))), Array.from({ length: 15 }, (_, i) => [turn(i + 1)]));
      const all = Array.from({ length: 16 }, (_, n) => turn(n));
      assert.deepEqual((await read(token, 'conv-1')).body.messages, all, 'a read joins the base and the appends in order');
      assert.equal((await appends()).length, 15, 'fewer than 16 appends are left as they are');

      expectStatus(await append(token, 'conv-1', 16, [turn(16)]), 200);
      const folding = await read(token, 'conv-1');
      assert.deepEqual(folding.body.messages, [...all, turn(16)]);
      assert.deepEqual(await appends(), [], 'the read folded 16 appends into the base');
      assert.deepEqual(JSON.parse(box.open((await base()).messages_sealed)), [...all, turn(16)]);
      expectStatus(await append(token, 'conv-1', 17, [turn(17)]), 200);
      const after = await read(token, 'conv-1');
      assert.deepEqual(after.body.messages, [...all, turn(16), turn(17)]);
      assert.equal(after.body.version, 18);
      assert.equal(after.body.size_bytes, Buffer.byteLength(JSON.stringify([...all, turn(16), turn(17)])));
    });

    it('master-key rotation re-seals every session and every append, batch by batch across agents, each to what it was', async () => {
      const agents = [await agentWithToken(), await agentWithToken()];
      const tokens = agents.map((agent) => agent.token);
      const agentIds = agents.map(({ agent }) => agent.id);
      for (const token of tokens) {
        for (const id of ['a', 'b:1', 'c.2']) {
          expectStatus(await append(token, id, 0, [{ id, token: token.slice(-6) }]), 200);
          expectStatus(await append(token, id, 1, [{ id, appended: true }]), 200);
        }
      }
      const oldKey = Buffer.from(createHash('sha256').update(control.database).digest()); // the harness's MASTER_KEY
      const newKey = randomBytes(32);
      const sealedRows = async () => [
        ...(await control.db('agent_sessions').whereIn('agent_id', agentIds).select('agent_id', 'session_id', 'messages_sealed')).map((row) => ({ ...row, version: 0 })),
        ...(await control.db('agent_session_appends').whereIn('agent_id', agentIds).select('agent_id', 'session_id', 'version', 'messages_sealed')),
      ];
      const before = await sealedRows();
      assert.deepEqual(before.map((row) => row.version).sort(), [0, 0, 0, 0, 0, 0, 2, 2, 2, 2, 2, 2], 'six sessions, each with an append');
      const result = await new KeyRotation(control.db, new SecretBox([newKey, oldKey])).rotate({ batchSize: 2 });
      assert.equal(result.left, 0);
      const after = await sealedRows();
      assert.equal(after.length, before.length);
      const onlyNew = new SecretBox([newKey]);
      const old = new SecretBox([oldKey]);
      for (const row of after) {
        const what = `${row.agent_id}/${row.session_id}@${row.version}`;
        assert.ok(row.messages_sealed.startsWith(`v2.${masterKeyId(newKey)}.`), `${what} re-sealed`);
        const was = before.find((earlier) => earlier.agent_id === row.agent_id && earlier.session_id === row.session_id && earlier.version === row.version)!;
        assert.equal(onlyNew.open(row.messages_sealed), old.open(was.messages_sealed), what);
      }
    });
  });

  describe("the owner's view (control API)", () => {
    it("lists an agent's live sessions, most recently used first, without their messages, to members and viewers", async () => {
      const { owner, agent, token } = await agentWithToken();
      const viewer = await signUpMember(control, owner.user.account_id, 'viewer');
      const marker = `listed-${randomBytes(6).toString('hex')}`;
      for (const id of ['first', 'second', 'third']) {
        control.clock.advance(1000);
        expectStatus(await append(token, id, 0, [{ content: marker }, turn(1)]), 200);
      }
      control.clock.advance(1000);
      const touched = await read(token, 'first');

      const listed = await control.request('GET', `/agents/${agent.id}/sessions`, { token: viewer.token });
      expectStatus(listed, 200);
      assert.ok(!JSON.stringify(listed.body).includes(marker), 'a listing shows messages');
      assert.deepEqual(listed.body.sessions.map((session: any) => session.session_id), ['first', 'third', 'second']);
      assert.deepEqual(Object.keys(listed.body.sessions[0]).sort(), ['created_at', 'expires_at', 'last_used_at', 'message_count', 'session_id', 'size_bytes', 'version']);
      assert.deepEqual(listed.body.sessions[0], {
        session_id: 'first',
        version: 1,
        size_bytes: touched.body.size_bytes,
        message_count: 2,
        created_at: new Date(control.clock.now().getTime() - 3000).toISOString(),
        last_used_at: control.clock.now().toISOString(),
        expires_at: touched.body.expires_at,
      });
      assert.deepEqual([listed.body.total, listed.body.page, listed.body.has_next], [3, 1, false]);

      const paged = await control.request('GET', `/agents/${agent.id}/sessions?page=2&page_size=2`, { token: owner.token });
      assert.deepEqual(paged.body.sessions.map((session: any) => session.session_id), ['second']);
      assert.deepEqual([paged.body.total, paged.body.page_size, paged.body.has_next], [3, 2, false]);
    });

    it("shows one session's messages to members, audited as session.read, without moving its expiry; a viewer 403, another account 404, an unknown or expired id 404", async () => {
      const { owner, agent, token } = await agentWithToken({ deploy: { session_ttl_seconds: 60 } });
      const member = await signUpMember(control, owner.user.account_id, 'member');
      const viewer = await signUpMember(control, owner.user.account_id, 'viewer');
      const stranger = await control.signUp();
      expectStatus(await append(token, 'conv-1', 0, [turn(0), turn(1)]), 200);
      // An append after the base: the read joins them, as a replica's read does.
      const written = await append(token, 'conv-1', 1, [turn(2)]);
      expectStatus(written, 200);
      control.clock.advance(5000);

      const shown = await control.request('GET', `/agents/${agent.id}/sessions/conv-1`, { token: member.token });
      expectStatus(shown, 200);
      assert.deepEqual(shown.body.messages, [turn(0), turn(1), turn(2)]);
      assert.deepEqual([shown.body.session_id, shown.body.version, shown.body.message_count, shown.body.size_bytes], ['conv-1', 2, 3, written.body.size_bytes]);
      assert.equal(shown.body.expires_at, written.body.expires_at, "the owner's read is no use of the session");
      const event = await expectOneEvent(control, owner.token, shown, { action: 'session.read', actor: userActor(member.user), target: { type: 'agent_session', id: 'conv-1' } });
      assert.ok(!JSON.stringify(event).includes('turn 0'), 'the event holds no message');
      assert.equal((await auditEvents(control, owner.token, `agent_id=${agent.id}&action=session.read`)).length, 1, 'the event carries its agent');

      expectError(await control.request('GET', `/agents/${agent.id}/sessions/conv-1`, { token: viewer.token }), 403, 'AUTHORISATION_DENIED');
      expectError(await control.request('GET', `/agents/${agent.id}/sessions/conv-1`, { token: stranger.token }), 404, 'NOT_FOUND');
      expectError(await control.request('GET', `/agents/${agent.id}/sessions/conv-2`, { token: owner.token }), 404, 'SESSION_NOT_FOUND');
      control.clock.advance(Date.parse(written.body.expires_at) - control.clock.now().getTime());
      expectError(await control.request('GET', `/agents/${agent.id}/sessions/conv-1`, { token: owner.token }), 404, 'SESSION_NOT_FOUND');
    });

    it('deletes a session for a writer, audited as session.delete; a viewer may not, another account gets 404', async () => {
      const { owner, agent, token } = await agentWithToken();
      const viewer = await signUpMember(control, owner.user.account_id, 'viewer');
      const stranger = await control.signUp();
      expectStatus(await append(token, 'conv-1', 0, [turn(0)]), 200);

      expectError(await control.request('DELETE', `/agents/${agent.id}/sessions/conv-1`, { token: viewer.token }), 403, 'AUTHORISATION_DENIED');
      expectError(await control.request('DELETE', `/agents/${agent.id}/sessions/conv-1`, { token: stranger.token }), 404, 'NOT_FOUND');
      expectError(await control.request('GET', `/agents/${agent.id}/sessions`, { token: stranger.token }), 404, 'NOT_FOUND');
      expectStatus(await read(token, 'conv-1'), 200);

      const deleted = await control.request('DELETE', `/agents/${agent.id}/sessions/conv-1`, { token: owner.token });
      expectStatus(deleted, 204);
      await expectOneEvent(control, owner.token, deleted, { action: 'session.delete', actor: userActor(owner.user), target: { type: 'agent_session', id: 'conv-1' } });
      assert.equal((await auditEvents(control, owner.token, `agent_id=${agent.id}&action=session.delete`)).length, 1, 'the event carries its agent');
      expectError(await read(token, 'conv-1'), 404, 'SESSION_NOT_FOUND');
      expectError(await control.request('DELETE', `/agents/${agent.id}/sessions/conv-1`, { token: owner.token }), 404, 'SESSION_NOT_FOUND');
      assert.deepEqual((await control.request('GET', `/agents/${agent.id}/sessions`, { token: owner.token })).body.sessions, []);
    });
  });
});
