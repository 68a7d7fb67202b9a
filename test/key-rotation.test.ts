import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { masterKeyId, SecretBox } from '../control/crypto/secret-box.js';
import { KeyRotation } from '../control/services/key-rotation.js';
import { runAdmin, startAdmin } from './support/admin-runner.js';
import { createAgent } from './support/control-api.js';
import { startControl, type TestControl } from './support/control-harness.js';
import { sealedPlaces, sealV1 } from './support/sealed-values.js';

const b64 = (key: Buffer) => key.toString('base64');

/**
 * `npm run admin -- keys status|rotate` on real Postgres, run as the operator runs it (a
 * process of its own) against a database the control API filled: every sealed value
 * (model keys and secret env, of agents and of their deployments) ends under the new key
 * with the same plaintext; --limit stops and a rerun continues; a kill midway loses
 * nothing; a row an API request holds is skipped, never overwritten, and finished later.
 * The running-agent half is test/key-rotation-podman.test.ts.
 */
describe('master-key rotation on Postgres (npm run admin -- keys)', function () {
  this.timeout(120_000);
  const oldKey = randomBytes(32);
  const newKey = randomBytes(32);
  const [oldId, newId] = [masterKeyId(oldKey), masterKeyId(newKey)];
  let control: TestControl;
  /** Each place's plaintext, read with the old key before any rotation. */
  let plaintexts: Map<string, string>;
  let agentsBefore: { id: string; version: number; updated_at: Date; deploy: any }[];
  /** The key every value is under once the tests so far have run: each later test rotates away from it. */
  let current = newKey;

  const admin = (keys: Buffer[], ...args: string[]) => runAdmin({ DATABASE_URL: control.config.databaseUrl, MASTER_KEYS: keys.map(b64).join(',') }, ['keys', ...args]);
  const progressLines = (stdout: string) => stdout.split('\n').filter((line) => line.startsWith('re-encrypted '));
  const keyIdsInDatabase = async () => (await sealedPlaces(control.db)).map(({ sealed }) => (sealed.startsWith('v2.') ? sealed.split('.')[1] : 'v1'));

  before(async () => {
    control = await startControl({ MASTER_KEY: b64(oldKey) });
    const { token, user } = await control.signUp();
    // Six agents with a replica each: past the free plan's replicas, as `npm run admin -- account exempt` allows.
    await control.db('accounts').where({ id: user.account_id }).update({ exempt: true });
    for (let i = 0; i < 6; i += 1) {
      // A create that deploys records deployment 1: its own copy of the sealed values.
      await createAgent(control, token, {
        name: `rotated ${i}`,
        api_key: `sk-model-${i}`,
        deploy: { replicas: 1, env: [{ key: 'TOKEN', value: `secret-${i}`, secret: true }, { key: 'PLAIN', value: 'shown' }] },
      });
    }
    // One model key as sealed before ciphertexts named their key.
    const [legacy] = await control.db('agents').orderBy('id').limit(1).select('id');
    await control.db('agents').where({ id: legacy.id }).update({ api_key_sealed: sealV1(oldKey, 'sk-model-legacy') });

    const old = new SecretBox([oldKey]);
    plaintexts = new Map((await sealedPlaces(control.db)).map(({ place, sealed }) => [place, old.open(sealed)]));
    assert.equal(plaintexts.size, 24, '6 agents and 6 deployments, each a model key and a secret env entry');
    agentsBefore = await control.db('agents').orderBy('id').select('id', 'version', 'updated_at', 'deploy');
  });
  after(async () => control?.close());

  it('keys status counts the values under each key id, v1 apart, before a rotation', async () => {
    const status = await admin([newKey, oldKey], 'status');
    assert.equal(status.code, 0, status.stderr);
    assert.match(status.stdout, new RegExp(`^${oldId} +23  older \\(key 2 of 2 in MASTER_KEYS\\): run keys rotate$`, 'm'));
    assert.match(status.stdout, /^v1 +1  from before key ids \(v1\): run keys rotate$/m);
    assert.match(status.stdout, new RegExp(`^${newId} +0  current \\(key 1 of 2 in MASTER_KEYS\\)$`, 'm'));
    assert.match(status.stdout, new RegExp(`^24 sealed values are not under the current key ${newId}$`, 'm'));
  });

  it('keys rotate --limit stops after that many rows, having re-encrypted only those, batch by batch', async () => {
    const before = await sealedPlaces(control.db);
    const run = await admin([newKey, oldKey], 'rotate', '--batch-size', '2', '--limit', '3');
    assert.equal(run.code, 0, run.stderr);
    // Rows of agents in id order: two in the first batch, one in the second, two values each.
    assert.deepEqual(progressLines(run.stdout), ['re-encrypted 4/24 values (agents)', 're-encrypted 6/24 values (agents)']);
    assert.match(run.stdout, /^stopped at --limit: re-encrypted 6 values, 18 left; run keys rotate again to continue$/m);

    const firstThree = new Set(agentsBefore.slice(0, 3).map((agent) => `agents ${agent.id} `));
    const after = await sealedPlaces(control.db);
    after.forEach(({ place, sealed }, index) => {
      if ([...firstThree].some((prefix) => place.startsWith(prefix))) assert.ok(sealed.startsWith(`v2.${newId}.`), `${place} re-encrypted`);
      else assert.equal(sealed, before[index]!.sealed, `${place} untouched`);
    });
  });

  it('a rerun continues with what is left, and every value opens under the new key alone to what it was', async () => {
    const run = await admin([newKey, oldKey], 'rotate', '--batch-size', '5');
    assert.equal(run.code, 0, run.stderr);
    assert.deepEqual(progressLines(run.stdout), [
      're-encrypted 6/18 values (agents)', // the three agents left
      're-encrypted 16/18 values (deployments)',
      're-encrypted 18/18 values (deployments)',
    ]);
    assert.match(run.stdout, new RegExp(`^done: re-encrypted 18 values; every sealed value is under master key ${newId}$`, 'm'));

    const onlyNew = new SecretBox([newKey]);
    const places = await sealedPlaces(control.db);
    assert.deepEqual(places.map(({ place }) => place).sort(), [...plaintexts.keys()].sort());
    for (const { place, sealed } of places) {
      assert.ok(sealed.startsWith(`v2.${newId}.`), `${place} is under the new key`);
      assert.equal(onlyNew.open(sealed), plaintexts.get(place), place);
    }
    // Not a change of the agent: no new version to roll out, the rest of the deploy as it was.
    const agentsAfter = await control.db('agents').orderBy('id').select('id', 'version', 'updated_at', 'deploy');
    agentsAfter.forEach((agent, index) => {
      const earlier = agentsBefore[index]!;
      assert.equal(agent.version, earlier.version);
      assert.equal(agent.updated_at.getTime(), earlier.updated_at.getTime());
      const withoutSealed = (deploy: any) => ({ ...deploy, env: deploy.env.map(({ sealed, ...entry }: any) => entry) });
      assert.deepEqual(withoutSealed(agent.deploy), withoutSealed(earlier.deploy));
    });
  });

  it('says when an older key may leave MASTER_KEYS, and a rotation with nothing to do changes nothing', async () => {
    const placesBefore = await sealedPlaces(control.db);
    const again = await admin([newKey, oldKey], 'rotate');
    assert.equal(again.code, 0, again.stderr);
    assert.deepEqual(progressLines(again.stdout), []);
    assert.match(again.stdout, /^done: re-encrypted 0 values/m);
    assert.deepEqual(await sealedPlaces(control.db), placesBefore);

    const status = await admin([newKey, oldKey], 'status');
    assert.match(status.stdout, new RegExp(`^${newId} +24  current`, 'm'));
    assert.match(status.stdout, new RegExp(`^${oldId} +0  older \\(key 2 of 2 in MASTER_KEYS\\): no value under it, it may leave MASTER_KEYS$`, 'm'));
    assert.match(status.stdout, /^every sealed value is under the current key .*: older keys may leave MASTER_KEYS$/m);
  });

  it('a run killed midway leaves every value readable, and the next run finishes', async () => {
    const thirdKey = randomBytes(32);
    const ring = new SecretBox([thirdKey, current]);
    const child = startAdmin({ DATABASE_URL: control.config.databaseUrl, MASTER_KEYS: [thirdKey, current].map(b64).join('\n') }, ['keys', 'rotate', '--batch-size', '1']);
    const exited = new Promise((resolve) => child.once('exit', resolve));
    await new Promise<void>((resolve, reject) => {
      let seen = '';
      child.stdout!.on('data', (chunk) => {
        seen += String(chunk);
        if (seen.includes('re-encrypted ')) {
          child.kill('SIGKILL');
          resolve();
        }
      });
      child.on('exit', () => reject(new Error(`the rotation ended before its first batch: ${seen}`)));
    });
    await exited;

    const ids = await keyIdsInDatabase();
    assert.ok(ids.includes(masterKeyId(thirdKey)), 'the committed batch stays');
    for (const { place, sealed } of await sealedPlaces(control.db)) assert.equal(ring.open(sealed), plaintexts.get(place), place);

    const rerun = await admin([thirdKey, current], 'rotate', '--batch-size', '50');
    assert.equal(rerun.code, 0, rerun.stderr);
    assert.deepEqual(new Set(await keyIdsInDatabase()), new Set([masterKeyId(thirdKey)]));
    current = thirdKey;
  });

  it('skips a row an API request holds, never writes over what the request commits, and comes back to it', async () => {
    const nextKey = randomBytes(32);
    const [held] = await control.db('agents').orderBy('id').limit(1).select('id');
    const request = await control.db.transaction();
    // As the API holds an agent it changes (AgentRepository.findForUpdate).
    await request('agents').where({ id: held.id }).forUpdate().first();
    let sweeps = 0;
    const rotation = new KeyRotation(control.db, new SecretBox([nextKey, current]), async () => {
      sweeps += 1;
      // Meanwhile the request commits a new model key, sealed by a copy of the control API not yet given the next key.
      await request('agents').where({ id: held.id }).update({ api_key_sealed: new SecretBox([current]).seal('sk-written-meanwhile') });
      await request.commit();
    });
    const result = await rotation.rotate({ batchSize: 100 });
    assert.equal(sweeps, 1, 'one more sweep, for the held row');
    assert.deepEqual({ left: result.left, stoppedAtLimit: result.stoppedAtLimit }, { left: 0, stoppedAtLimit: false });
    const row = await control.db('agents').where({ id: held.id }).first();
    assert.ok(row.api_key_sealed.startsWith(`v2.${masterKeyId(nextKey)}.`));
    assert.equal(new SecretBox([nextKey]).open(row.api_key_sealed), 'sk-written-meanwhile', 'the request\'s write survives, re-encrypted');
    current = nextKey;
  });

  it('stops at a value under a key MASTER_KEYS lacks, naming the row and the key id, and writes nothing of that batch', async () => {
    const lostKey = randomBytes(32);
    const [deployment] = await control.db('deployments').orderBy('id').limit(1).select('id');
    await control.db('deployments').where({ id: deployment.id }).update({ api_key_sealed: new SecretBox([lostKey]).seal('sk-unreadable') });
    const nextKey = randomBytes(32);
    const placesBefore = await sealedPlaces(control.db);

    const status = await admin([nextKey, current], 'status');
    assert.match(status.stdout, new RegExp(`^${masterKeyId(lostKey)} +1  NOT in MASTER_KEYS: these cannot be opened until its key is added back$`, 'm'));
    const run = await admin([nextKey, current], 'rotate', '--batch-size', '100');
    assert.equal(run.code, 1);
    assert.match(run.stderr, new RegExp(`deployments ${deployment.id}: sealed value is under master key ${masterKeyId(lostKey)}, which MASTER_KEYS does not hold`));
    assert.doesNotMatch(run.stderr, /\n\s+at /, 'an operator\'s message, not a stack trace');
    for (const key of [lostKey, nextKey, current]) assert.ok(!run.stderr.includes(b64(key)) && !run.stdout.includes(b64(key)), 'a key in the output');
    // The agents' batch committed before; the deployments' batch, holding the bad row, rolled back whole.
    const after = await sealedPlaces(control.db);
    after.forEach(({ place, sealed }, index) => {
      if (place.startsWith('deployments ')) assert.equal(sealed, placesBefore[index]!.sealed, `${place} untouched`);
      else assert.ok(sealed.startsWith(`v2.${masterKeyId(nextKey)}.`), `${place} re-encrypted`);
    });
  });
});
