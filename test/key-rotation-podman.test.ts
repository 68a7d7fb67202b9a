import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { masterKeyId } from '../control/crypto/secret-box.js';
import { runAdmin } from './support/admin-runner.js';
import { expectStatus } from './support/control-api.js';
import { startControl, type TestControl } from './support/control-harness.js';
import { createRunningAgent, waitFor } from './support/orch-helpers.js';
import { sealedPlaces } from './support/sealed-values.js';

const b64 = (key: Buffer) => key.toString('base64');

/** The control API's master-key settings: MASTER_KEYS only (the harness's own MASTER_KEY emptied, i.e. unset). */
const withKeys = (...keys: Buffer[]) => ({ MASTER_KEY: '', MASTER_KEYS: keys.map(b64).join(',') });

/**
 * Issue 18's "the key rotation passes with real Postgres and podman": an agent runs with
 * a model key and a secret env value, the operator restarts the control API with
 * MASTER_KEYS=new,old, rotates with `npm run admin -- keys rotate` while the agent serves,
 * then restarts it with the new key alone. The replica keeps running throughout; then a
 * deploy that keeps the env, and a rollback to the first deployment (whose own copy of the
 * secrets was rotated too), each start a replica with the right values.
 */
describe('master-key rotation with running agents (podman)', function () {
  this.timeout(300_000);
  const oldKey = randomBytes(32);
  const newKey = randomBytes(32);
  let control: TestControl | undefined;
  let database: string;

  /** Stops the control API as a crash or a restart would, leaving the containers running, and starts it again on the same database. */
  async function restart(env: Record<string, string>): Promise<TestControl> {
    await control!.crash();
    control = undefined;
    control = await startControl(env, { orchestrate: true, resume: { database } });
    return control;
  }

  before(async () => {
    control = await startControl(withKeys(oldKey), { orchestrate: true });
    database = control.database;
  });
  after(async () => control?.close());

  const envOf = (n: number) => [
    { key: 'MODE', value: 'serve' },
    { key: 'PLAIN', value: `plain-${n}` },
    { key: 'TOKEN', value: `secret-value-${n}`, secret: true },
  ];

  /**
   * The env of the agent's routed replicas once every one shows PLAIN=`plain` and none is
   * one of `replaced` (the old ones drained), and the replica ids.
   */
  async function served(agentId: string, plain: string, replaced: string[] = []): Promise<{ env: Map<string, string>; replicas: string[] }> {
    return waitFor(`every replica of ${agentId} to serve PLAIN=${plain}`, async () => {
      const routed = (await control!.driver!.status(agentId))?.replicas.filter((r) => r.state === 'running' && r.address) ?? [];
      if (routed.some((r) => replaced.includes(r.id))) return undefined;
      const envs = await Promise.all(routed.map(async (r) => parseEnv(await (await fetch(`http://${r.address}/cgi-bin/env`)).text())));
      return envs.length > 0 && envs.every((env) => env.get('PLAIN') === plain) ? { env: envs[0]!, replicas: routed.map((r) => r.id) } : undefined;
    }, 120_000);
  }

  async function newestEnded(id: string, token: string): Promise<string> {
    return waitFor('the newest deployment to end', async () => {
      const newest = (await control!.request('GET', `/agents/${id}/deployments?page_size=1`, { token })).body.deployments[0];
      return newest.status === 'in_progress' ? undefined : newest.status;
    }, 120_000);
  }

  it('re-encrypts the secrets of a running agent online; with the old key gone, the replica keeps running, and a deploy and a rollback start replicas with the right values', async () => {
    const { token } = await control!.signUp();
    const { id } = await createRunningAgent(control!, token, { api_key: 'sk-model-of-the-test', deploy: { env: envOf(1) } });
    assert.equal(await newestEnded(id, token), 'succeeded');
    expectStatus(await control!.request('POST', `/agents/${id}/deploy`, { token, body: { env: envOf(2) } }), 202);
    const before = await served(id, 'plain-2');
    assert.equal(before.env.get('TOKEN'), 'secret-value-2');
    assert.equal(await newestEnded(id, token), 'succeeded');
    const places = await sealedPlaces(control!.db);
    // The agent's model key and TOKEN, and each of its two deployments' copies of them.
    assert.equal(places.length, 6);
    assert.ok(places.every(({ sealed }) => sealed.startsWith(`v2.${masterKeyId(oldKey)}.`)));

    // 1. Every copy of the control API learns the new key, first; the old one still opens what it sealed.
    control = await restart(withKeys(newKey, oldKey));
    // 2. The rotation, as a process of its own, while the control API runs and the agent serves.
    const rotated = await runAdmin({ DATABASE_URL: control.config.databaseUrl, ...withKeys(newKey, oldKey) }, ['keys', 'rotate', '--batch-size', '1']);
    assert.equal(rotated.code, 0, rotated.stderr);
    assert.match(rotated.stdout, /^re-encrypted 6\/6 values \(deployments\)$/m);
    for (const { place, sealed } of await sealedPlaces(control.db)) assert.ok(sealed.startsWith(`v2.${masterKeyId(newKey)}.`), `${place} under the new key`);
    const status = await runAdmin({ DATABASE_URL: control.config.databaseUrl, ...withKeys(newKey, oldKey) }, ['keys', 'status']);
    assert.match(status.stdout, new RegExp(`^${masterKeyId(oldKey)} +0  older .*it may leave MASTER_KEYS$`, 'm'));

    // 3. The old key leaves MASTER_KEYS. The first reconcile builds the agent's job (decrypting its secrets) and adopts what runs.
    // (Sessions live in Postgres: the token outlives the restarts.)
    control = await restart(withKeys(newKey));
    const adopted = await served(id, 'plain-2');
    assert.deepEqual(adopted.replicas, before.replicas, 'the same replica serves: rotating changed nothing it runs');
    assert.equal(adopted.env.get('TOKEN'), 'secret-value-2');
    assert.equal((await control.request('GET', `/agents/${id}`, { token })).body.status, 'running');

    // 4. A deploy that leaves env alone starts a replica from the agent's rotated values, opened with the new key alone.
    expectStatus(await control.request('POST', `/agents/${id}/deploy`, { token, body: { resources: { memory_mb: 384 } } }), 202);
    const redeployed = await served(id, 'plain-2', before.replicas);
    assert.equal(redeployed.env.get('TOKEN'), 'secret-value-2');
    assert.equal(redeployed.env.get('OPENAI_API_KEY'), 'sk-model-of-the-test');
    assert.equal(await newestEnded(id, token), 'succeeded');

    // 5. A rollback to deployment 1 opens that deployment's own rotated copy with the new key alone.
    const first = (await control.request('GET', `/agents/${id}/deployments`, { token })).body.deployments.find((d: any) => d.number === 1);
    expectStatus(await control.request('POST', `/agents/${id}/rollback`, { token, body: { deployment_id: first.id } }), 202);
    const rolledBack = await served(id, 'plain-1', redeployed.replicas);
    assert.equal(rolledBack.env.get('TOKEN'), 'secret-value-1');
    assert.equal(rolledBack.env.get('OPENAI_API_KEY'), 'sk-model-of-the-test');
    assert.equal(await newestEnded(id, token), 'succeeded');
  });
});

function parseEnv(text: string): Map<string, string> {
  const env = new Map<string, string>();
  for (const line of text.split('\n')) {
    const eq = line.indexOf('=');
    if (eq > 0) env.set(line.slice(0, eq), line.slice(eq + 1));
  }
  return env;
}
