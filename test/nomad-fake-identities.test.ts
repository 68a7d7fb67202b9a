import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { parseKeySet } from '../control/crypto/json-web-key-set.js';
import { verifyWorkloadIdentity } from '../control/crypto/nomad-workload-identity.js';
import { nomadJobFor } from '../control/orchestrator/nomad/job-spec.js';
import { freePort } from '../scripts/lib/local-services.js';
import { startControl, type TestControl } from './support/control-harness.js';
import { createAgent } from './support/control-api.js';
import { startFakeCluster, type FakeCluster } from './support/fake-nomad/index.js';
import { admitJobRegistration, type ClusterFacts } from './support/fake-nomad/validate/register.js';
import { defaultNomadSettings, sampleSpec } from './support/nomad-samples.js';
import { waitFor } from './support/wait.js';

/**
 * Workload identities in the fake Nomad, held to Nomad's source: the identity blocks its
 * validators refuse (nomad/structs/workload_id.go, `WorkloadIdentity.Validate`, through
 * `Task.Canonicalize` and `Task.Validate`), the JWT its server signs for an allocation
 * (`WorkloadIdentityClaimsBuilder.Build`), and what its client does with it in a container
 * (identity_hook.go: the file in the task's secrets directory, named by the interpolated env).
 */
type Json = Record<string, any>;

const SECOND = 1_000_000_000;
const FACTS: ClusterFacts = { region: 'global', namespaces: new Set(['default']), nodePools: new Set(['default', 'all', 'agents']) };
const AGENT_SERVICES = { url: 'http://10.0.1.5:7090', tokenTtlSeconds: 3600, maxSessionBytes: 1_048_576 };

/** The driver's job for the sample agent, with the agent services identity, at `count` replicas. */
const agentJob = (count = 0): Json => ({ Job: nomadJobFor(sampleSpec({ count, scaling: { enabled: false, min: 0, max: 5 } }), defaultNomadSettings(), AGENT_SERVICES), PreserveCounts: false });
const taskOf = (request: Json) => request.Job.TaskGroups[0].Tasks[0];
const refusal = (request: Json) => {
  const answer = admitJobRegistration(request, new URLSearchParams(), FACTS, undefined);
  return 'status' in answer ? answer.message : null;
};

describe('the fake Nomad: identity blocks, as Nomad validates them', () => {
  it("accepts the driver's agent-services identity", () => {
    assert.equal(refusal(agentJob()), null);
  });

  it('refuses a TTL on the default identity, named or left unnamed, with the whole of Nomad\'s message', () => {
    for (const Name of ['default', '']) {
      const request = agentJob();
      taskOf(request).Identities = [{ Name, Audience: ['x'], File: true, TTL: 60 * SECOND }];
      assert.equal(refusal(request), [
        '1 error occurred:',
        '\t* Task group agent validation failed: 1 error occurred:',
        '\t* Task agent validation failed: 1 error occurred:',
        '\t* Identity "default" is invalid: 1 error occurred:',
        '\t* ttl for default identity not yet supported',
        '', '', '', '', '', '', '', '',
      ].join('\n'), JSON.stringify(Name));
    }
  });

  it('refuses a second default identity, a name unsafe in a file name, an empty audience, a bad change mode, a negative TTL and a filepath without file', () => {
    const cases: [Json[], string][] = [
      [[{ Name: 'default' }, { Name: 'default' }], 'Duplicate default identities found'],
      [[{ Name: 'agent services', Audience: ['a'], TTL: SECOND }], 'Identity "agent services" is invalid: 1 error occurred:\n\t* invalid name "agent services". Must match regex ^[a-zA-Z0-9-_]{1,128}$'],
      [[{ Name: 'a', Audience: ['ok', ''], TTL: SECOND }], 'an empty string is an invalid audience (2)'],
      [[{ Name: 'a', Audience: ['x'], ChangeMode: 'signal' }], 'change_signal must be specified when using change_mode="signal"'],
      [[{ Name: 'a', Audience: ['x'], ChangeMode: 'noop', ChangeSignal: 'SIGHUP' }], 'can only use change_signal="SIGHUP" with change_mode="signal"'],
      [[{ Name: 'a', Audience: ['x'], ChangeMode: 'restart', ChangeSignal: 'sighup' }], 'can only use change_signal="SIGHUP"'],
      [[{ Name: 'a', Audience: ['x'], ChangeMode: 'reload' }], 'invalid change_mode: reload'],
      [[{ Name: 'a', Audience: ['x'], TTL: -1 }], 'ttl must be >= 0'],
      [[{ Name: 'a', Audience: ['x'], Filepath: 'local/id.jwt' }], 'file parameter must be true in order to specify filepath'],
    ];
    for (const [identities, message] of cases) {
      const request = agentJob();
      taskOf(request).Identities = identities;
      const refused = refusal(request);
      assert.ok(refused?.includes(message), `expected ${JSON.stringify(message)} in:\n${refused}`);
    }
  });

  it('takes what Nomad only warns about: no audience, no TTL, env without restart', () => {
    const request = agentJob();
    taskOf(request).Identities = [{ Name: 'a', Env: true }, { Name: 'b', Audience: ['x', 'y'], File: true, ChangeMode: 'signal', ChangeSignal: 'SIGHUP', Filepath: 'secrets/b.jwt' }];
    assert.equal(refusal(request), null);
  });
});

describe('the fake Nomad: the identities it signs', function () {
  this.timeout(60_000);
  let cluster: FakeCluster;

  before(async () => {
    cluster = await startFakeCluster({ simulate: true, oidcIssuer: 'https://nomad.example.com' });
  });
  after(async () => cluster?.close());

  const nomad = (method: string, path: string, body?: unknown) =>
    fetch(cluster.nomadAddr + path, { method, headers: { 'X-Nomad-Token': cluster.nomadToken, 'content-type': 'application/json' }, body: body ? JSON.stringify(body) : undefined });

  it("refuses an unknown field of an identity block, as the fake refuses any (Nomad's JSON decoder would drop it)", async () => {
    const request = agentJob();
    taskOf(request).Identities[0].Aud = ['agent-services'];
    const response = await nomad('PUT', '/v1/jobs', request);
    assert.equal(response.status, 400);
    assert.match(await response.text(), /Job\.TaskGroups\[0\]\.Tasks\[0\]\.Identities\[0\]\.Aud: unknown field/);
  });

  it("signs an allocation's named identity with the claims Nomad's builder makes, verifiable against its JWKS", async () => {
    const request = agentJob(1);
    const response = await nomad('PUT', '/v1/jobs', request);
    assert.equal(response.status, 200, await response.clone().text());
    const alloc = await waitFor('an allocation', async () => cluster.allocations(request.Job.ID)[0], 20_000);
    const now = new Date('2026-03-01T12:00:00.750Z');
    const token = cluster.identityToken(alloc.ID, 'agent-services', now);
    const [header, claims] = token.split('.').slice(0, 2).map((part) => JSON.parse(Buffer.from(part, 'base64url').toString())) as [Json, Json];
    assert.deepEqual(header, { alg: 'RS256', kid: cluster.keyring.activeKeyId, typ: 'JWT' });
    const issuedAt = Math.floor(now.getTime() / 1000);
    assert.deepEqual(Object.keys(claims), ['nomad_namespace', 'nomad_job_id', 'nomad_allocation_id', 'nomad_task', 'iss', 'sub', 'aud', 'exp', 'nbf', 'iat', 'jti']);
    assert.deepEqual({ ...claims, jti: undefined }, {
      nomad_namespace: 'default', nomad_job_id: request.Job.ID, nomad_allocation_id: alloc.ID, nomad_task: 'agent', iss: 'https://nomad.example.com',
      sub: `global:default:${request.Job.ID}:agent:agent:agent-services`, aud: 'agent-services',
      exp: issuedAt + AGENT_SERVICES.tokenTtlSeconds, nbf: issuedAt, iat: issuedAt, jti: undefined,
    });
    assert.match(claims.jti, /^[0-9a-f-]{36}$/);
    // The key it names is published, public, at /.well-known/jwks.json: the control API's check passes.
    const jwks = await (await fetch(`${cluster.nomadAddr}/.well-known/jwks.json`)).json();
    const keys = parseKeySet(jwks);
    const identity = await verifyWorkloadIdentity(token, async (kid) => keys.get(kid) ?? null, { audience: 'agent-services', now });
    assert.deepEqual(identity, { namespace: 'default', jobId: request.Job.ID, allocationId: alloc.ID, task: 'agent', validUntil: new Date((claims.exp + 60) * 1000) });
    assert.throws(() => cluster.identityToken(alloc.ID, 'vault_default'), /identity not found/);
    assert.throws(() => cluster.identityToken('no-such-alloc', 'agent-services'), /allocation not found/);
    // A named identity counts for the implicit identity constraint, once.
    const stored = cluster.job(request.Job.ID)!.TaskGroups[0].Constraints as Json[];
    assert.equal(stored.filter((c) => c.LTarget === '${attr.nomad.version}').length, 1);
  });
});

describe('the fake Nomad: a replica container reads its identity where AGENT_SERVICES_TOKEN_FILE says, and reaches the agent services with it', function () {
  this.timeout(180_000);
  let cluster: FakeCluster;
  let control: TestControl;

  before(async () => {
    cluster = await startFakeCluster();
    // Containers reach the host's listener through podman's host.containers.internal, on a port chosen here.
    const port = await freePort();
    control = await startControl({ AGENT_SERVICES_PORT: String(port), NOMAD_AGENT_SERVICES_URL: `http://host.containers.internal:${port}` }, { nomad: cluster });
  });
  after(async () => {
    await control?.close();
    await cluster?.close();
  });

  it('the JWT is in /secrets, the env names it, and from inside the container it writes its own session and reads no other agent\'s', async () => {
    const owner = await control.signUp();
    const agent = await createAgent(control, owner.token, { name: 'in a container', deploy: { replicas: 1 } });
    const other = await createAgent(control, owner.token, { name: 'another', deploy: { replicas: 1 } });
    const running = async (id: string) => cluster.allocations(`agent-${id}`).find((alloc) => alloc.ClientStatus === 'running');
    const alloc = await waitFor('a running container', () => running(agent.id), 90_000);
    const otherAlloc = await waitFor('the other agent running', () => running(other.id), 90_000);
    const names = (await promisify(execFile)('podman', ['ps', '--format', '{{.Names}}'])).stdout.split('\n');
    const name = names.find((candidate) => candidate.startsWith('fake-nomad-') && candidate.endsWith(alloc.ID.slice(0, 8)));
    assert.ok(name, `the allocation's container among ${names.join(', ')}`);
    // The other agent's session, of the same id.
    const otherToken = cluster.identityToken(otherAlloc.ID, 'agent-services', control.clock.now());
    const written = await fetch(`${control.agentServicesUrl}/v1/sessions/shared/messages`, {
      method: 'POST', headers: { authorization: `Bearer ${otherToken}`, 'content-type': 'application/json' }, body: JSON.stringify({ expected_version: 0, messages: ['of the other agent'] }),
    });
    assert.equal(written.status, 200, await written.text());

    // The fake client signed the file's JWT by the wall clock; the control API checks it by the harness clock.
    control.clock.set(new Date());
    const script = [
      'echo "file=$AGENT_SERVICES_TOKEN_FILE"',
      'token=$(cat "$AGENT_SERVICES_TOKEN_FILE")',
      'echo "token=$token"',
      // busybox wget exits non-zero on an error status: each call says how it ended.
      'wget -q -O - --header "Authorization: Bearer $token" --header "Content-Type: application/json" --post-data \'{"expected_version":0,"messages":["from inside"]}\' "$AGENT_SERVICES_URL/v1/sessions/mine/messages" && echo " append=ok" || echo "append=failed"',
      'wget -q -O - --header "Authorization: Bearer $token" "$AGENT_SERVICES_URL/v1/sessions/shared" && echo " read-other=ok" || echo "read-other=refused"',
    ].join('\n');
    const output = (await promisify(execFile)('podman', ['exec', name!, 'sh', '-c', script], { encoding: 'utf8' })).stdout;
    assert.match(output, /^file=\/secrets\/nomad_agent-services\.jwt$/m, output);
    const token = /^token=(\S+)$/m.exec(output)?.[1];
    assert.ok(token, output);
    const claims = JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString());
    assert.equal(claims.nomad_allocation_id, alloc.ID);
    assert.equal(claims.nomad_job_id, `agent-${agent.id}`);
    assert.match(output, /"version":1.* append=ok/, output);
    assert.match(output, /read-other=refused/, output);
    assert.ok(!output.includes('of the other agent'), output);
    const mine = await control.db('agent_sessions').where({ agent_id: agent.id, session_id: 'mine' }).first();
    assert.ok(mine, 'the session written from inside the container is the agent\'s');
  });
});
