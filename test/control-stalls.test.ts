import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../control/config/config.js';
import { connectDatabase, migrate } from '../control/db/database.js';
import { ConfigError } from '../contract/settings-reader.js';
import { freePort, startPostgres, startRedis, type RunningService } from '../scripts/lib/local-services.js';
import { startControl, type ApiResponse, type TestControl } from './support/control-harness.js';
import { agentServicesRequest, createAgent, expectError, expectStatus } from './support/control-api.js';
import { whileFrozen } from './support/freeze.js';
import { TEMPLATE_DATABASE } from './support/global.js';
import { waitFor } from './support/wait.js';

/**
 * Postgres or Redis stalled (SIGSTOP: connections stay open, nothing answers) under a
 * running control API with its default timeouts (issue 31, finding 4). What needs the
 * stalled server answers 503 with its code and Retry-After, each request on its own
 * deadline, so concurrent writes do not queue behind each other; what does not need it is
 * served; /readyz names the server that stalled. The suite freezes only its own servers.
 *
 * The bounds are generous against the defaults (a stall is given up on after 1-1.5 s)
 * yet well below what one request waiting behind another would take.
 */
describe('control API: Postgres and Redis stalled', function () {
  this.timeout(120_000);
  /** Each answer that needs the stalled server comes within this of its request. */
  const OUTAGE_ANSWER_MS = 4_000;
  /** Each answer that does not need it comes within this. */
  const UNAFFECTED_ANSWER_MS = 2_000;
  let workDir: string;
  let postgres: RunningService | undefined;
  let redis: RunningService | undefined;
  let control: TestControl;
  let token: string;
  let email: string;
  let password: string;
  /** A replica's token for an agent with a session, made before the stalls. */
  let replicaToken: string;

  before(async () => {
    workDir = mkdtempSync(join(tmpdir(), 'platform-stalls-'));
    chmodSync(workDir, 0o755); // the postgres user must reach its data dir inside
    postgres = await startPostgres({ dataDir: join(workDir, 'postgres'), port: await freePort(), database: TEMPLATE_DATABASE, fsync: false });
    const template = connectDatabase(postgres.url, { min: 0, max: 1 });
    await migrate(template);
    await template.destroy();
    redis = await startRedis({ dataDir: join(workDir, 'redis'), port: await freePort(), persistent: false });
    control = await startControl({}, { services: { templateDatabaseUrl: postgres.url, redisUrl: redis.url } });
    ({ token, password } = await control.signUp());
    email = (await control.request('GET', '/auth/me', { token })).body.email;
    const agent = await createAgent(control, token, { name: 'made before the stalls' });
    replicaToken = control.mintAgentToken(agent.id);
    expectStatus(await agentServicesRequest(control, replicaToken, 'POST', '/sessions/conv/messages', { expected_version: 0, messages: ['before'] }), 200);
  });

  after(async () => {
    await control?.close().catch(() => undefined);
    await redis?.stop().catch(() => undefined);
    await postgres?.stop().catch(() => undefined);
    if (workDir) rmSync(workDir, { recursive: true, force: true });
  });

  /** The answer and how long it took. */
  const timed = async (send: () => Promise<ApiResponse>): Promise<{ response: ApiResponse; ms: number }> => {
    const start = performance.now();
    const response = await send();
    return { response, ms: performance.now() - start };
  };
  const readiness = async (): Promise<ApiResponse> => {
    const response = await fetch(control.baseUrl.replace(/\/v1$/, '') + '/readyz');
    return { status: response.status, body: await response.json(), headers: response.headers };
  };
  const createFive = () =>
    Promise.all(Array.from({ length: 5 }, (_, i) => timed(() => control.request('POST', '/agents', { token, body: { name: `stalled write ${i}` } }))));

  /** A 503 with the code and a whole number of seconds to wait, answered in time. */
  const expectOutageInTime = ({ response, ms }: { response: ApiResponse; ms: number }, code: string, what: string) => {
    expectError(response, 503, code);
    assert.match(response.headers.get('retry-after') ?? '', /^[1-9]\d*$/, `Retry-After on ${what}`);
    assert.ok(ms < OUTAGE_ANSWER_MS, `${what} answered after ${Math.round(ms)} ms`);
  };
  const expectServedInTime = ({ response, ms }: { response: ApiResponse; ms: number }, what: string) => {
    expectStatus(response, 200);
    assert.ok(ms < UNAFFECTED_ANSWER_MS, `${what} answered after ${Math.round(ms)} ms`);
  };
  const agentNames = async () => (await control.request('GET', '/agents', { token })).body.agents.map((a: { name: string }) => a.name).sort();

  it('Redis stalled: five concurrent writes the edge must learn of each answer 503 EDGE_UNAVAILABLE on their own deadline, and change nothing', async () => {
    const namesBefore = await agentNames();
    // Creates take the account's row lock in turn, each waiting on Redis inside its transaction: the pile-up of finding 4.
    const writes = await whileFrozen(redis!.pid, createFive);
    writes.forEach((write, i) => expectOutageInTime(write, 'EDGE_UNAVAILABLE', `write ${i}`));
    assert.deepEqual(await agentNames(), namesBefore);
  });

  it('Redis stalled: what needs only Postgres is served at speed, login answers 503 CACHE_UNAVAILABLE, /readyz names Redis', async () => {
    await whileFrozen(redis!.pid, async () => {
      // The first request meets the stall fresh: the token's rate-limit count is given up on, not waited for.
      expectServedInTime(await timed(() => control.request('GET', '/agents', { token })), 'GET /agents, the first');
      // Alongside writes holding the account's lock and their connections while they wait on Redis.
      const [writes, listings] = await Promise.all([
        createFive(),
        Promise.all(Array.from({ length: 10 }, () => timed(() => control.request('GET', '/agents', { token })))),
      ]);
      writes.forEach((write, i) => expectOutageInTime(write, 'EDGE_UNAVAILABLE', `write ${i}`));
      listings.forEach((listing, i) => expectServedInTime(listing, `GET /agents ${i}`));
      expectOutageInTime(await timed(() => control.request('POST', '/auth/login', { body: { email, password } })), 'CACHE_UNAVAILABLE', 'login');
      const ready = await timed(readiness);
      expectError(ready.response, 503, 'NOT_READY');
      assert.deepEqual(ready.response.body.details.dependencies, { postgres: 'ok', redis: 'unavailable' });
    });
    // And back by itself once Redis runs again.
    await waitFor('a write to succeed again', async () => ((await control.request('POST', '/agents', { token, body: { name: 'made after the Redis stall' } })).status === 201 ? true : undefined), 30_000);
    expectStatus(await readiness(), 200);
  });

  it("Postgres stalled: an agent's session read and write, on connections the pool holds, answer 503 DATABASE_UNAVAILABLE in time, and leave the session whole", async () => {
    // Statements prepared outside knex's runner (control/db/prepared-statement.ts): the pool's idle connections take them, and the stall is met mid-query.
    const [sessionRead, sessionWrite] = await whileFrozen(postgres!.pid, () =>
      Promise.all([
        timed(() => agentServicesRequest(control, replicaToken, 'GET', '/sessions/conv')),
        timed(() => agentServicesRequest(control, replicaToken, 'POST', '/sessions/conv/messages', { expected_version: 1, messages: ['during'] })),
      ]),
    );
    expectOutageInTime(sessionRead, 'DATABASE_UNAVAILABLE', 'a session read');
    expectOutageInTime(sessionWrite, 'DATABASE_UNAVAILABLE', 'a session write');
    await waitFor('a session read to succeed again', async () => ((await agentServicesRequest(control, replicaToken, 'GET', '/sessions/conv')).status === 200 ? true : undefined), 30_000);
    // The write's statement may have run once Postgres thawed; if it did, it is whole and the only one.
    const messages = (await agentServicesRequest(control, replicaToken, 'GET', '/sessions/conv')).body.messages;
    assert.ok(JSON.stringify(messages) === '["before"]' || JSON.stringify(messages) === '["before","during"]', JSON.stringify(messages));
  });

  it('Postgres stalled: reads and concurrent writes answer 503 DATABASE_UNAVAILABLE in time, what needs no database is served, /readyz names Postgres', async () => {
    await whileFrozen(postgres!.pid, async () => {
      const [writes, reads] = await Promise.all([
        createFive(),
        Promise.all(Array.from({ length: 5 }, () => timed(() => control.request('GET', '/agents', { token })))),
      ]);
      writes.forEach((write, i) => expectOutageInTime(write, 'DATABASE_UNAVAILABLE', `write ${i}`));
      reads.forEach((read, i) => expectOutageInTime(read, 'DATABASE_UNAVAILABLE', `GET /agents ${i}`));

      // Once the pool's connections were given up on, a new request meets the stall through a new connection.
      expectOutageInTime(await timed(() => control.request('GET', '/agents', { token })), 'DATABASE_UNAVAILABLE', 'GET /agents, later');
      // The registration mode is configuration: no database involved.
      expectServedInTime(await timed(() => control.request('GET', '/auth/registration')), 'GET /auth/registration');
      const ready = await timed(readiness);
      expectError(ready.response, 503, 'NOT_READY');
      assert.deepEqual(ready.response.body.details.dependencies, { postgres: 'unavailable', redis: 'ok' });
      assert.ok(ready.ms < UNAFFECTED_ANSWER_MS, `/readyz answered after ${Math.round(ready.ms)} ms`);
    });
    await waitFor('GET /agents to succeed again', async () => ((await control.request('GET', '/agents', { token })).status === 200 ? true : undefined), 30_000);
    await createAgent(control, token, { name: 'made after the Postgres stall' });
    expectStatus(await readiness(), 200);
  });
});

describe('control API: the stall timeouts as settings', () => {
  const base = { DATABASE_URL: 'postgres://u:p@127.0.0.1:5432/db', REDIS_URL: 'redis://127.0.0.1:6379', MASTER_KEY: Buffer.alloc(32, 7).toString('base64') };
  const problemsOf = (env: Record<string, string>): string[] => {
    try {
      loadConfig({ ...base, ...env });
      return [];
    } catch (error) {
      if (error instanceof ConfigError) return error.problems;
      throw error;
    }
  };

  it('gives up on a stalled server within 2 s by default', () => {
    const config = loadConfig(base);
    assert.deepEqual({ ...config.databaseTimeouts }, { connectMs: 1_000, acquireMs: 1_500, queryMs: 1_500 });
    assert.equal(config.redisCommandTimeoutMs, 1_000);
    assert.equal(config.tokenRateLimitTimeoutMs, 250);
  });

  it('refuses a value out of bounds, and waits that do not fit inside each other, saying why', () => {
    assert.ok(problemsOf({ DATABASE_QUERY_TIMEOUT_MS: '0' }).some((problem) => problem.startsWith('DATABASE_QUERY_TIMEOUT_MS: expected an integer')));
    assert.ok(problemsOf({ REDIS_COMMAND_TIMEOUT_MS: 'soon' }).some((problem) => problem.startsWith('REDIS_COMMAND_TIMEOUT_MS: expected an integer')));
    assert.deepEqual(problemsOf({ DATABASE_CONNECT_TIMEOUT_MS: '3000' }), [
      'DATABASE_CONNECT_TIMEOUT_MS: must not exceed DATABASE_ACQUIRE_TIMEOUT_MS (a request waiting for a connection waits for a new one to open too)',
    ]);
    assert.deepEqual(problemsOf({ TOKEN_RATE_LIMIT_TIMEOUT_MS: '2000' }), [
      'TOKEN_RATE_LIMIT_TIMEOUT_MS: must not exceed REDIS_COMMAND_TIMEOUT_MS (the count is one Redis command)',
    ]);
    assert.deepEqual(problemsOf({ DATABASE_CONNECT_TIMEOUT_MS: '3000', DATABASE_ACQUIRE_TIMEOUT_MS: '5000', TOKEN_RATE_LIMIT_TIMEOUT_MS: '2000', REDIS_COMMAND_TIMEOUT_MS: '2000' }), []);
  });
});
