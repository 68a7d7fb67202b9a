import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { startControl, type ApiResponse, type TestControl } from './support/control-harness.js';
import { createAgent, expectError, expectStatus } from './support/control-api.js';
import { startFakeCluster, type FakeCluster } from './support/fake-nomad/index.js';
import { signJws, workloadIdentityClaims } from './support/fake-nomad/identities.js';
import { waitFor } from './support/wait.js';

/**
 * Replicas on Nomad authenticate to the agent services with their task's workload identity
 * (issue 37; docs/nomad.md, "Agent services"): the Nomad driver against the fake Nomad
 * (simulated allocations), the control API on real Postgres and Redis, and JWTs as the fake
 * server signs them for an allocation's `agent-services` identity (its keyring and claims
 * builder port Nomad's: test/support/fake-nomad/identities.ts), checked by the control API
 * against the fake's /.well-known/jwks.json.
 */
type Json = Record<string, any>;

const SECOND = 1_000_000_000;
const SERVICES_URL = 'http://10.0.1.5:7090';
const IDENTITY = 'agent-services';

describe('agent services on Nomad: the workload identity as the replica credential', function () {
  this.timeout(120_000);
  let cluster: FakeCluster;
  let control: TestControl;

  before(async () => {
    cluster = await startFakeCluster({ simulate: true });
    control = await startControl({ NOMAD_AGENT_SERVICES_URL: SERVICES_URL }, { nomad: cluster });
  });
  after(async () => {
    await control?.close();
    await cluster?.close();
  });

  /** A request a replica sends: `path` under /v1, with `token` as its bearer. */
  async function call(method: string, path: string, token: string | null, body?: unknown): Promise<ApiResponse> {
    const headers: Record<string, string> = {};
    if (token !== null) headers.authorization = `Bearer ${token}`;
    if (body !== undefined) headers['content-type'] = 'application/json';
    const response = await fetch(`${control.agentServicesUrl}/v1${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await response.text();
    return { status: response.status, body: text ? JSON.parse(text) : undefined, headers: response.headers };
  }
  const append = (token: string, sessionId: string, expected_version: number, messages: unknown[]) =>
    call('POST', `/sessions/${sessionId}/messages`, token, { expected_version, messages });
  const read = (token: string, sessionId: string) => call('GET', `/sessions/${sessionId}`, token);

  /** An agent of a new account, once Nomad runs an allocation of its job. */
  async function agentOnNomad(name: string): Promise<{ id: string; jobId: string; allocId: string; ownerToken: string }> {
    const owner = await control.signUp();
    const agent = await createAgent(control, owner.token, { name, api_key: 'sk-test', deploy: { replicas: 1 } });
    const jobId = `agent-${agent.id}`;
    const allocId = await waitFor(`an allocation of ${jobId}`, async () => cluster.allocations(jobId).find((alloc) => alloc.ClientStatus === 'running')?.ID as string | undefined, 30_000);
    return { id: agent.id, jobId, allocId, ownerToken: owner.token };
  }

  /** The JWT Nomad would write to the allocation's secrets/nomad_agent-services.jwt, issued at the control API's now. */
  const identityOf = (allocId: string) => cluster.identityToken(allocId, IDENTITY, control.clock.now());

  /** Claims as Nomad builds them for `agent`'s allocation, changed by `change`, signed by the cluster's active key. */
  function signedAs(agent: { jobId: string; allocId: string }, change: Json = {}, identity: Json = {}): string {
    const claims = workloadIdentityClaims({
      job: { ID: agent.jobId, Namespace: 'default' },
      region: 'global',
      alloc: { ID: agent.allocId, Namespace: 'default', TaskGroup: 'agent' },
      task: { Name: 'agent' },
      identity: { Name: IDENTITY, Audience: [IDENTITY], TTL: 3600 * SECOND, ...identity },
      now: control.clock.now(),
    });
    return cluster.keyring.sign({ ...claims, ...change });
  }

  it('submits each agent job with the agent-services identity and the variables that point the runtime at its JWT', async () => {
    const agent = await agentOnNomad('identity block');
    const task = cluster.job(agent.jobId)!.TaskGroups[0].Tasks[0];
    assert.deepEqual(task.Identities, [{ Name: IDENTITY, Audience: [IDENTITY], Env: false, File: true, TTL: control.config.agentServices.tokenTtlSeconds * SECOND, ChangeMode: '' }]);
    assert.equal(task.Env.AGENT_SERVICES_URL, SERVICES_URL);
    // Interpolated by the Nomad client to /secrets/… in a docker task; the identity hook writes the JWT there.
    assert.equal(task.Env.AGENT_SERVICES_TOKEN_FILE, '${NOMAD_SECRETS_DIR}/nomad_agent-services.jwt');
    assert.equal(task.Env.SESSION_MAX_BYTES, String(control.config.agentServices.sessions.maxBytes));
  });

  it("reads and writes its own agent's sessions with the JWT Nomad signs for its allocation", async () => {
    const agent = await agentOnNomad('nomad writer');
    const token = identityOf(agent.allocId);
    assert.match(token, /^eyJ[\w-]+\.[\w-]+\.[\w-]+$/, 'a compact JWS');
    expectStatus(await append(token, 'conv-1', 0, [{ role: 'user', content: 'hello' }]), 200);
    expectStatus(await append(token, 'conv-1', 1, [{ role: 'assistant', content: 'hi' }]), 200);
    const session = await read(token, 'conv-1');
    expectStatus(session, 200);
    assert.equal(session.body.version, 2);
    assert.deepEqual(session.body.messages, [{ role: 'user', content: 'hello' }, { role: 'assistant', content: 'hi' }]);
    // The owner sees it: the JWT's job named this agent.
    const listed = await control.db('agent_sessions').where({ agent_id: agent.id }).select('session_id');
    assert.deepEqual(listed.map((row) => row.session_id), ['conv-1']);
  });

  it("cannot read or delete another agent's session: each JWT is scoped to its own job's agent", async () => {
    const a = await agentOnNomad('agent a');
    const b = await agentOnNomad('agent b');
    const tokenA = identityOf(a.allocId);
    const tokenB = identityOf(b.allocId);
    expectStatus(await append(tokenB, 'shared-id', 0, [{ role: 'user', content: 'a secret of b' }]), 200);
    const stolen = await read(tokenA, 'shared-id');
    expectError(stolen, 404, 'SESSION_NOT_FOUND');
    assert.ok(!JSON.stringify(stolen.body).includes('a secret of b'));
    expectError(await call('DELETE', '/sessions/shared-id', tokenA), 404, 'SESSION_NOT_FOUND');
    assert.deepEqual((await read(tokenB, 'shared-id')).body.messages, [{ role: 'user', content: 'a secret of b' }]);
  });

  it('refuses with 401 a JWT of another key, expired, for another audience, with alg none, of a job no agent has, of another namespace or task', async () => {
    const agent = await agentOnNomad('refusals');
    const good = identityOf(agent.allocId);
    expectStatus(await append(good, 'conv-1', 0, [{ role: 'user', content: 'kept' }]), 200);
    const [header, payload] = good.split('.') as [string, string];
    const noneHeader = Buffer.from(JSON.stringify({ alg: 'none', kid: cluster.keyring.activeKeyId, typ: 'JWT' })).toString('base64url');
    const otherKey = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey;
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString());
    const refused: [string, string][] = [
      ['signed by another key under the cluster\'s kid', signJws({ alg: 'RS256', kid: cluster.keyring.activeKeyId, typ: 'JWT' }, claims, otherKey)],
      ['its signature taken for other claims', `${header}.${Buffer.from(JSON.stringify({ ...claims, nomad_allocation_id: 'x' })).toString('base64url')}.${good.split('.')[2]}`],
      ['alg none', `${noneHeader}.${payload}.`],
      ['expired an hour and a minute ago', signedAs(agent, { exp: Math.floor(control.clock.now().getTime() / 1000) - 61 })],
      ['for Nomad itself (the default identity\'s audience)', signedAs(agent, {}, { Audience: ['nomadproject.io'] })],
      ['for Vault', signedAs(agent, {}, { Audience: ['vault.io'] })],
      ['no expiry (an identity without a TTL)', signedAs(agent, {}, { TTL: 0 })],
      ['a job no agent has', signedAs({ ...agent, jobId: 'platform-control' })],
      ['a job of an agent that does not exist', signedAs({ ...agent, jobId: 'agent-agt_nobody00000000000000' })],
      ['a job in another namespace', signedAs(agent, { nomad_namespace: 'platform' })],
      ['another task of the job', signedAs(agent, { nomad_task: 'sidecar' })],
      ['a service identity (no task)', signedAs(agent, { nomad_task: undefined })],
    ];
    for (const [what, token] of refused) {
      const response = await read(token, 'conv-1');
      assert.equal(response.status, 401, `${what}: ${response.status} ${JSON.stringify(response.body)}`);
      assert.equal(response.body.code, 'UNAUTHENTICATED', what);
      assert.equal(response.headers.get('www-authenticate'), 'Bearer', what);
    }
    // Nothing refused changed the session.
    assert.deepEqual((await read(good, 'conv-1')).body.messages, [{ role: 'user', content: 'kept' }]);
  });

  it('refuses the JWT of an allocation Nomad stopped, as Nomad does, within the minute a verified JWT is kept; and of one Nomad never had', async () => {
    const agent = await agentOnNomad('stopped');
    const token = identityOf(agent.allocId);
    expectStatus(await append(token, 'conv-1', 0, [{ role: 'user', content: 'before the stop' }]), 200);
    // Signed by the cluster's own key for this agent's job, but naming an allocation Nomad does not have.
    expectError(await read(signedAs({ ...agent, allocId: '00000000-0000-4000-8000-000000000000' }), 'conv-1'), 401, 'UNAUTHENTICATED');

    const scaled = await control.request('POST', `/agents/${agent.id}/scale`, { token: agent.ownerToken, body: { direction: 'down', count: 1 } });
    expectStatus(scaled, 200);
    await waitFor('the allocation to stop', async () => (['complete', 'failed', 'lost'].includes(cluster.allocations(agent.jobId).find((alloc) => alloc.ID === agent.allocId)?.ClientStatus) ? true : undefined), 30_000);
    // nomad/auth/auth.go, verifyWorkloadIdentityClaim: a terminal allocation's claims are treated as expired.
    control.clock.advance(60_000);
    expectError(await read(token, 'conv-1'), 401, 'UNAUTHENTICATED');
    const lookups = cluster.requests.filter((request) => request.path === `/v1/allocation/${agent.allocId}`);
    assert.ok(lookups.length >= 2, 'asked of Nomad when first verified, and again after the minute');
    // The session itself stays, for the agent's next replica.
    assert.equal((await control.db('agent_sessions').where({ agent_id: agent.id, session_id: 'conv-1' })).length, 1);
  });

  it('expires the JWT at its exp (with a minute of leeway), and takes the one Nomad renews', async () => {
    const agent = await agentOnNomad('expiry');
    const first = identityOf(agent.allocId);
    expectStatus(await append(first, 'conv-1', 0, [{ role: 'user', content: 'one' }]), 200);
    const ttlMs = control.config.agentServices.tokenTtlSeconds * 1000;
    control.clock.advance(ttlMs / 2);
    // Nomad renews at about half its life (helper/retry.go, ExpiryToRenewTime); the file then holds this one.
    const renewed = identityOf(agent.allocId);
    control.clock.advance(ttlMs / 2 + 60_000);
    expectError(await read(first, 'conv-1'), 401, 'UNAUTHENTICATED');
    assert.equal((await read(renewed, 'conv-1')).body.version, 1, 'the session outlived the JWT');
  });

  it('picks up a rotated root key: a new kid is fetched from the JWKS, at most once per 10 seconds', async () => {
    const agent = await agentOnNomad('rotation');
    const jwksFetches = () => cluster.requests.filter((request) => request.path === '/.well-known/jwks.json').length;
    const kidOf = (token: string) => JSON.parse(Buffer.from(token.split('.')[0]!, 'base64url').toString()).kid as string;
    // Past the key set's 15 minutes, so this first call fetches it, whatever the tests before did.
    control.clock.advance(15 * 60_000);
    const before = identityOf(agent.allocId);
    expectStatus(await append(before, 'conv-1', 0, [{ role: 'user', content: 'before the rotation' }]), 200);
    const fetched = jwksFetches();

    cluster.keyring.rotate();
    const after = identityOf(agent.allocId);
    assert.notEqual(kidOf(after), kidOf(before));
    expectError(await read(after, 'conv-1'), 401, 'UNAUTHENTICATED');
    assert.equal(jwksFetches(), fetched, 'no fetch within 10 s of the last one');
    control.clock.advance(10_000);
    assert.equal((await read(after, 'conv-1')).body.version, 1, 'the new key verifies once fetched');
    assert.equal(jwksFetches(), fetched + 1);
    assert.equal((await read(before, 'conv-1')).status, 200, 'the older key is still published: its JWTs verify until they expire');

    // A flood of made-up kids costs Nomad nothing more within the 10 s.
    const claims = JSON.parse(Buffer.from(after.split('.')[1]!, 'base64url').toString());
    for (let i = 0; i < 5; i += 1) expectError(await read(cluster.keyring.sign(claims, { kid: `made-up-${i}` }), 'conv-1'), 401, 'UNAUTHENTICATED');
    assert.equal(jwksFetches(), fetched + 1);
  });

  it('fetches the JWKS without the Nomad token, as Nomad serves it to anyone', async () => {
    const response = await fetch(`${cluster.nomadAddr}/.well-known/jwks.json`);
    assert.equal(response.status, 200);
    const { keys } = (await response.json()) as { keys: Json[] };
    assert.ok(keys.length >= 1);
    for (const key of keys) assert.deepEqual(Object.keys(key), ['use', 'kty', 'kid', 'alg', 'n', 'e']);
  });
});
