import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { SecretBox } from '../control/crypto/secret-box.js';
import type { AgentRow } from '../control/domain/agent.js';
import { jobSpecFor } from '../control/domain/job-spec.js';
import { redactCredential, registryOf } from '../control/domain/registry-auth.js';
import { authFileContent, withAuthFile } from '../control/orchestrator/podman/registry-auth-file.js';
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { SecretScratch } from '../control/orchestrator/podman/secret-scratch.js';
import { scratchDirectory } from '../runtime-image/test/helpers/scratch-directory.js';
import { KeyRotation } from '../control/services/key-rotation.js';
import { createAgent, expectError, expectStatus } from './support/control-api.js';
import { startControl, type TestControl } from './support/control-harness.js';
import { sealedPlaces } from './support/sealed-values.js';

const IMAGE = 'registry.example.com/team/bot:1.0';

/**
 * deploy.registry_auth through the API, without containers (test/registry-podman.test.ts
 * pulls with it from a real registry): validated with a 422 at the field that is wrong,
 * write-only (in no response, audit row or deployment view), sealed where the agent and
 * each deployment keep it, kept or dropped across deploys, restored by a rollback,
 * rotated with the master key, and refused in a form the Nomad driver cannot deliver.
 */
describe('deploy.registry_auth (write-only registry credentials)', function () {
  this.timeout(60_000);
  let control: TestControl;
  let token: string;
  const password = `pw-${randomBytes(9).toString('base64url')}`;
  const auth = { username: 'robot$team', password };

  before(async () => {
    control = await startControl();
  });
  after(async () => control?.close());
  beforeEach(async () => {
    ({ token } = await control.signUp());
  });

  const create = (deploy: Record<string, unknown>) => control.request('POST', '/agents', { token, body: { name: 'private image', deploy: { replicas: 0, ...deploy } } });
  const deploy = (id: string, body: Record<string, unknown>) => control.request('POST', `/agents/${id}/deploy`, { token, body });
  const rowOf = async (id: string): Promise<AgentRow> => control.db('agents').where({ id }).first();
  const jobOf = async (id: string) =>
    jobSpecFor(await rowOf(id), new SecretBox(control.config.masterKeys), { runtimeImage: control.config.runtimeImage, urlOf: (slug) => `http://${slug}` });

  it('reads the registry from a fully qualified reference only', () => {
    assert.equal(registryOf('registry.example.com/team/bot:1'), 'registry.example.com');
    assert.equal(registryOf('127.0.0.1:5000/team/bot@sha256:' + 'a'.repeat(64)), '127.0.0.1:5000');
    assert.equal(registryOf('localhost/agent-runtime:1'), 'localhost');
    assert.equal(registryOf('team/bot:1'), null, 'a short name would go through the search list');
    assert.equal(registryOf('bot'), null);
  });

  it("writes podman's auth file with the one credential under its registry, 0600 in a 0700 directory, gone after the pull", async () => {
    const decode = (content: string, registry: string) => JSON.parse(content).auths[registry];
    const basic = decode(authFileContent({ registry: 'r.example.com:5000', username: 'robot', password: 'p:w' }), 'r.example.com:5000');
    assert.equal(Buffer.from(basic.auth, 'base64').toString(), 'robot:p:w');
    const token = decode(authFileContent({ registry: 'r.example.com', identityToken: 'refresh-token' }), 'r.example.com');
    assert.deepEqual(token, { auth: Buffer.from('<token>:').toString('base64'), identitytoken: 'refresh-token' });
    assert.deepEqual(JSON.parse(authFileContent(null)), { auths: {} }, "none: never the host's own credentials");
    let seen = '';
    const root = join(scratchDirectory('registry-auth'), 'secrets');
    const scratch = new SecretScratch(root);
    await withAuthFile(scratch, { registry: 'r.example.com', username: 'u', password: 'p' }, async (path) => {
      seen = path;
      assert.equal(statSync(path).mode & 0o777, 0o600);
      assert.equal(statSync(dirname(path)).mode & 0o777, 0o700);
      assert.ok(readFileSync(path, 'utf8').includes('r.example.com'));
    });
    assert.ok(seen && !existsSync(dirname(seen)), 'removed after');
    await assert.rejects(withAuthFile(scratch, null, async (path) => {
      seen = path;
      throw new Error('pull failed');
    }));
    assert.ok(!existsSync(dirname(seen)), 'removed after a failure too');
    // What a control API killed during a pull left is removed at the driver's next start.
    mkdirSync(join(root, 'call-killed'), { recursive: true });
    writeFileSync(join(root, 'call-killed', 'auth.json'), authFileContent({ registry: 'r.example.com', username: 'u', password: 'p' }));
    scratch.clear();
    assert.ok(!existsSync(root), "a killed run's auth file is gone");
    assert.equal(redactCredential('denied for robot with s3cret (s3cret)', { registry: 'r', username: 'robot', password: 's3cret' }), 'denied for robot with [redacted] ([redacted])');
  });

  it('stores the credentials sealed and shows them nowhere: responses, deployments, audit rows, rows in the clear', async () => {
    const created = await create({ image: IMAGE, registry_auth: auth });
    expectStatus(created, 201);
    const id = created.body.id;
    const shown = [
      JSON.stringify(created.body),
      JSON.stringify((await control.request('GET', `/agents/${id}`, { token })).body),
      JSON.stringify((await control.request('GET', '/agents', { token })).body),
      JSON.stringify((await control.request('GET', `/agents/${id}/deployments`, { token })).body),
    ];
    for (const text of shown) {
      assert.ok(!text.includes(password), 'no response holds the password');
      assert.ok(!text.includes('registry_auth'), 'write-only: not even the field is shown');
    }
    assert.ok(!created.body.deploy.registry_auth);

    const row = await rowOf(id);
    assert.equal(row.deploy.registry_auth?.registry, 'registry.example.com');
    for (const table of ['agents', 'deployments', 'audit_events']) {
      const rows = await control.db(table).select();
      assert.ok(rows.length > 0, table);
      assert.ok(!JSON.stringify(rows).includes(password), `no ${table} row holds the password in the clear`);
    }
    const audit = await control.db('audit_events').where({ action: 'agent.create' }).first();
    assert.ok(audit, 'the create was audited');
    assert.deepEqual((await jobOf(id)).registryAuth, { registry: 'registry.example.com', username: 'robot$team', password });
    const places = (await sealedPlaces(control.db)).filter(({ place }) => place.endsWith('registry_auth'));
    assert.equal(places.length, 2, "the agent's and its first deployment's copy");
  });

  it('answers 422 at the field that is wrong', async () => {
    expectError(await create({ image: IMAGE, registry_auth: { username: 'u' } }), 422, 'VALIDATION_ERROR', ['body', 'deploy', 'registry_auth', 'password']);
    expectError(await create({ image: IMAGE, registry_auth: { password: 'p' } }), 422, 'VALIDATION_ERROR', ['body', 'deploy', 'registry_auth', 'username']);
    expectError(await create({ image: IMAGE, registry_auth: { ...auth, identity_token: 't' } }), 422, 'VALIDATION_ERROR', ['body', 'deploy', 'registry_auth']);
    expectError(await create({ image: IMAGE, registry_auth: { username: 'a:b', password: 'p' } }), 422, 'VALIDATION_ERROR', ['body', 'deploy', 'registry_auth', 'username']);
    expectError(await create({ image: IMAGE, registry_auth: { ...auth, server: 'x' } }), 422, 'VALIDATION_ERROR', ['body', 'deploy', 'registry_auth', 'server']);
    expectError(await create({ image: IMAGE, registry_auth: 'robot:secret' }), 422, 'VALIDATION_ERROR', ['body', 'deploy', 'registry_auth']);
    expectError(await create({ registry_auth: auth }), 422, 'VALIDATION_ERROR', ['body', 'deploy', 'registry_auth']);
    expectError(await create({ image: 'team/bot:1', registry_auth: auth }), 422, 'VALIDATION_ERROR', ['body', 'deploy', 'image']);
    const refused = await create({ image: IMAGE, registry_auth: { username: 'u', password } });
    assert.equal(refused.status, 201, 'a valid one passes');
    const invalid = await create({ image: 'team/bot:1', registry_auth: { username: 'u', password } });
    assert.ok(!JSON.stringify(invalid.body).includes(password), 'a 422 does not echo the password');
  });

  it('keeps the credentials across a deploy that leaves them out, refuses to send them to another registry, drops them with null', async () => {
    const { id } = await createAgent(control, token, { deploy: { replicas: 0, image: IMAGE, registry_auth: auth } });
    expectStatus(await deploy(id, { image: 'registry.example.com/team/bot:1.1' }), 202);
    assert.equal((await jobOf(id)).registryAuth?.registry, 'registry.example.com', 'same registry: kept');
    expectError(await deploy(id, { image: 'evil.example.net/team/bot:1' }), 422, 'VALIDATION_ERROR', ['body', 'deploy', 'image']);
    expectError(await deploy(id, { image: 'docker.io/library/nginx:1.27' }), 422, 'VALIDATION_ERROR', ['body', 'deploy', 'image']);
    expectStatus(await deploy(id, { image: 'evil.example.net/team/bot:1', registry_auth: { username: 'other', password: 'theirs' } }), 202);
    assert.equal((await jobOf(id)).registryAuth?.registry, 'evil.example.net', 'given again for the new registry');
    expectStatus(await deploy(id, { image: 'docker.io/library/nginx:1.27', registry_auth: null }), 202);
    assert.equal((await jobOf(id)).registryAuth, undefined);
    assert.equal((await rowOf(id)).deploy.registry_auth, undefined);
  });

  it("restores a deployment's credentials with a rollback, and rotates them with the master key", async () => {
    const { id } = await createAgent(control, token, { deploy: { replicas: 0, image: IMAGE, registry_auth: auth } });
    expectStatus(await deploy(id, { image: 'docker.io/library/nginx:1.27', registry_auth: null }), 202);
    const first = (await control.request('GET', `/agents/${id}/deployments`, { token })).body.deployments.find((d: any) => d.number === 1);
    expectStatus(await control.request('POST', `/agents/${id}/rollback`, { token, body: { deployment_id: first.id } }), 202);
    assert.deepEqual((await jobOf(id)).registryAuth, { registry: 'registry.example.com', username: 'robot$team', password });

    const newKey = randomBytes(32);
    const box = new SecretBox([newKey, ...control.config.masterKeys]);
    await new KeyRotation(control.db, box).rotate({ batchSize: 10 });
    for (const { place, sealed } of await sealedPlaces(control.db)) assert.ok(box.isCurrent(sealed), `${place} under the new key`);
    const rotated = jobSpecFor(await rowOf(id), new SecretBox([newKey]), { runtimeImage: 'x', urlOf: (slug) => slug });
    assert.deepEqual(rotated.registryAuth, { registry: 'registry.example.com', username: 'robot$team', password }, 'the new key alone opens it');
  });

  it('takes an identity token on podman, not on Nomad, whose docker driver takes a user name and password only', async () => {
    expectStatus(await create({ image: IMAGE, registry_auth: { identity_token: `tok-${password}` } }), 201);
    const nomad = await startControl({ ORCHESTRATOR: 'nomad', NOMAD_ADDR: 'http://127.0.0.1:9', CONSUL_HTTP_ADDR: 'http://127.0.0.1:9' });
    try {
      const { token: nomadToken } = await nomad.signUp();
      const response = await nomad.request('POST', '/agents', { token: nomadToken, body: { name: 'x', deploy: { replicas: 0, image: IMAGE, registry_auth: { identity_token: 't' } } } });
      expectError(response, 422, 'VALIDATION_ERROR', ['body', 'deploy', 'registry_auth', 'identity_token']);
      const withPassword = await nomad.request('POST', '/agents', { token: nomadToken, body: { name: 'y', deploy: { replicas: 0, image: IMAGE, registry_auth: auth } } });
      expectStatus(withPassword, 201);
    } finally {
      await nomad.close();
    }
  });
});
