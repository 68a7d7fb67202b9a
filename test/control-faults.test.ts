import assert from 'node:assert/strict';
import { mkdtempSync, chmodSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connectDatabase, migrate } from '../control/db/database.js';
import { freePort, startPostgres, startRedis, type RunningService } from '../scripts/lib/local-services.js';
import { startControl, type ApiResponse, type TestControl } from './support/control-harness.js';
import { agentServicesRequest, createAgent, expectError, expectStatus } from './support/control-api.js';
import { TEMPLATE_DATABASE } from './support/global.js';
import { operationsOf } from './support/fuzz/operations.js';
import { waitFor } from './support/wait.js';

/**
 * Postgres and Redis stopped under a running control API, then started again: while one
 * is away the API answers 503 with its code and Retry-After (never 500), keeps what it
 * had, and serves again by itself once it is back. The suite runs its own Postgres and
 * Redis, so stopping them disturbs no other suite.
 */
describe('control API: Postgres and Redis outages', function () {
  this.timeout(180_000);
  let workDir: string;
  let postgresPort: number;
  let redisPort: number;
  let postgres: RunningService | undefined;
  let redis: RunningService | undefined;
  let control: TestControl;
  let token: string;
  let email: string;
  let password: string;
  let document: any;
  /** POST /auth/logout ends the session it is sent with: each pass over every operation signs out one of these, not `token`. */
  let spareSessions: string[];

  const startOurPostgres = async () => {
    postgres = await startPostgres({ dataDir: join(workDir, 'postgres'), port: postgresPort, database: TEMPLATE_DATABASE, fsync: false });
    return postgres;
  };
  const startOurRedis = async () => {
    redis = await startRedis({ dataDir: join(workDir, 'redis'), port: redisPort, persistent: false });
    return redis;
  };

  before(async () => {
    workDir = mkdtempSync(join(tmpdir(), 'platform-faults-'));
    chmodSync(workDir, 0o755); // the postgres user must reach its data dir inside
    [postgresPort, redisPort] = [await freePort(), await freePort()];
    const { url: templateDatabaseUrl } = await startOurPostgres();
    const template = connectDatabase(templateDatabaseUrl, { min: 0, max: 1 });
    await migrate(template);
    await template.destroy();
    const { url: redisUrl } = await startOurRedis();
    control = await startControl({}, { services: { templateDatabaseUrl, redisUrl } });
    ({ token, password } = await control.signUp());
    email = (await control.request('GET', '/auth/me', { token })).body.email;
    document = (await control.request('GET', '/openapi.json')).body;
    spareSessions = [];
    for (let i = 0; i < 2; i += 1) spareSessions.push((await control.request('POST', '/auth/login', { body: { email, password } })).body.token);
  });

  after(async () => {
    await control?.close().catch(() => undefined);
    await redis?.stop().catch(() => undefined);
    await postgres?.stop().catch(() => undefined);
    if (workDir) rmSync(workDir, { recursive: true, force: true });
  });

  const login = () => control.request('POST', '/auth/login', { body: { email, password } });
  const health = async (): Promise<ApiResponse> => {
    const response = await fetch(control.baseUrl.replace(/\/v1$/, '') + '/healthz');
    return { status: response.status, body: await response.json(), headers: response.headers };
  };
  const agentNames = async () => (await control.request('GET', '/agents', { token })).body.agents.map((a: { name: string }) => a.name).sort();

  /** A 503 with the code and a whole number of seconds to wait, as a client would act on it. */
  const expectOutage = (response: ApiResponse, code: string) => {
    expectError(response, 503, code);
    assert.match(response.headers.get('retry-after') ?? '', /^[1-9]\d*$/, `Retry-After on ${code}`);
  };

  /** Every documented operation, with a token, and with valid bodies where no token is needed (so they reach the database). */
  const everyOperation = () =>
    operationsOf(document).map((op) => {
      const path = op.path.replace(/\{\w+\}/g, 'agt_none');
      // Operations without a token check their body before any read: they get one that passes.
      const validBodies: Record<string, object> = {
        '/auth/register': { email: `new-${Date.now()}@example.com`, password: 'a long password', name: 'New' },
        '/auth/login': { email, password },
        '/auth/sso/exchange': { code: 'a-code-no-one-was-given' },
      };
      const body = validBodies[op.path] ?? (op.body ? {} : undefined);
      const caller = op.path === '/auth/logout' ? spareSessions.shift() : token;
      return { name: `${op.method} ${op.path}`, run: () => control.request(op.method, path, { token: caller, body }) };
    });

  describe('Redis stopped, then started again', () => {
    let namesBefore: string[];

    before(async () => {
      await createAgent(control, token, { name: 'made before the Redis outage' });
      namesBefore = await agentNames();
      await redis!.stop();
    });

    it('answers login and /account/usage with 503 CACHE_UNAVAILABLE and Retry-After', async () => {
      expectOutage(await login(), 'CACHE_UNAVAILABLE');
      expectOutage(await control.request('GET', '/account/usage', { token }), 'CACHE_UNAVAILABLE');
    });

    it('answers a change the edge must learn of with 503 EDGE_UNAVAILABLE and Retry-After, and changes nothing', async () => {
      expectOutage(await control.request('POST', '/agents', { token, body: { name: 'made during the Redis outage' } }), 'EDGE_UNAVAILABLE');
      assert.deepEqual(await agentNames(), namesBefore);
    });

    it('answers /healthz with 503 NOT_READY naming Redis', async () => {
      const response = await health();
      expectError(response, 503, 'NOT_READY');
      assert.deepEqual(response.body.details.dependencies, { postgres: 'ok', redis: 'unavailable' });
    });

    it('answers no request with a 500, and still serves what needs only Postgres', async () => {
      for (const { name, run } of everyOperation()) {
        const response = await run();
        assert.notEqual(response.status, 500, `${name}: ${JSON.stringify(response.body)}`);
      }
      expectStatus(await control.request('GET', '/agents', { token }), 200);
    });

    it('serves login and usage again once Redis is back, with no restart, and lost no agent', async () => {
      await startOurRedis();
      await waitFor('login to succeed again', async () => ((await login()).status === 200 ? true : undefined), 30_000);
      expectStatus(await control.request('GET', '/account/usage', { token }), 200);
      expectStatus(await health(), 200);
      assert.deepEqual(await agentNames(), namesBefore);
      await createAgent(control, token, { name: 'made after the Redis outage' });
    });
  });

  describe('Postgres stopped, then started again', () => {
    let namesBefore: string[];
    /** A replica's token for an agent with a session of one turn, made before the outage. */
    let replicaToken: string;
    const turn = { role: 'user', content: 'kept through the outage' };

    before(async () => {
      const agent = await createAgent(control, token, { name: 'made before the Postgres outage' });
      replicaToken = control.mintAgentToken(agent.id);
      expectStatus(await agentServicesRequest(control, replicaToken, 'POST', '/sessions/conv/messages', { expected_version: 0, messages: [turn] }), 200);
      namesBefore = await agentNames();
      await postgres!.stop();
    });

    it("answers an agent's session reads and writes with 503 DATABASE_UNAVAILABLE and Retry-After", async () => {
      expectOutage(await agentServicesRequest(control, replicaToken, 'GET', '/sessions/conv'), 'DATABASE_UNAVAILABLE');
      expectOutage(await agentServicesRequest(control, replicaToken, 'POST', '/sessions/conv/messages', { expected_version: 1, messages: [turn] }), 'DATABASE_UNAVAILABLE');
      expectOutage(await agentServicesRequest(control, replicaToken, 'PUT', '/sessions/conv', { expected_version: 1, messages: [] }), 'DATABASE_UNAVAILABLE');
    });

    it('answers every documented operation that uses the database with 503 DATABASE_UNAVAILABLE and Retry-After', async () => {
      // None reads Postgres: the registration mode is configuration, the document is built from the routes, the version is the release's;
      // an SSO callback without a state (as sent here, with no query) is refused before anything is read.
      const withoutDatabase = new Set(['GET /auth/registration', 'GET /openapi.json', 'GET /version', 'GET /auth/sso/callback']);
      const checked = everyOperation().filter(({ name }) => !withoutDatabase.has(name));
      assert.ok(checked.length >= 20, `${checked.length} operations`);
      for (const { name, run } of checked) {
        const response = await run();
        assert.equal(response.body?.code, 'DATABASE_UNAVAILABLE', `${name}: ${response.status} ${JSON.stringify(response.body)}`);
        expectOutage(response, 'DATABASE_UNAVAILABLE');
      }
    });

    it('answers /healthz with 503 NOT_READY naming Postgres', async () => {
      const response = await health();
      expectError(response, 503, 'NOT_READY');
      assert.deepEqual(response.body.details.dependencies, { postgres: 'unavailable', redis: 'ok' });
    });

    it('serves again once Postgres is back, with no restart, and lost no agent', async () => {
      await startOurPostgres();
      await waitFor('GET /agents to succeed again', async () => ((await control.request('GET', '/agents', { token })).status === 200 ? true : undefined), 30_000);
      assert.deepEqual(await agentNames(), namesBefore);
      expectStatus(await login(), 200);
      expectStatus(await health(), 200);
      await createAgent(control, token, { name: 'made after the Postgres outage' });
      // The session as it was before: the writes refused during the outage wrote nothing.
      const written = await agentServicesRequest(control, replicaToken, 'POST', '/sessions/conv/messages', { expected_version: 1, messages: [turn] });
      expectStatus(written, 200);
      assert.equal(written.body.version, 2);
      assert.deepEqual((await agentServicesRequest(control, replicaToken, 'GET', '/sessions/conv')).body.messages, [turn, turn]);
    });
  });
});
