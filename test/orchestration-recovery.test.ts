import assert from 'node:assert/strict';
import { startControl, type TestControl } from './support/control-harness.js';
import { containersOf, networkExists, podman } from './support/podman.js';
import { waitFor } from './support/wait.js';

describe('agents on podman: quotas under races, and recovery after a crash of the control API', function () {
  this.timeout(240_000);

  describe('the free plan quota', () => {
    let control: TestControl;
    before(async () => {
      control = await startControl({}, { orchestrate: true });
    });
    after(async () => control?.close());

    it('never runs more than 3 replicas, however many scale-ups race', async () => {
      const { token } = await control.signUp();
      const ids: string[] = [];
      for (const name of ['one', 'two']) {
        const created = await control.request('POST', '/agents', { token, body: { name, api_key: 'sk-test', deploy: { replicas: 1, resources: { cpu: 0.5, memory_mb: 128 } } } });
        assert.equal(created.status, 201);
        ids.push(created.body.id);
      }
      // Two replicas are asked for; room for one more. Ten parallel scale-ups of one replica each.
      const attempts = await Promise.all(
        Array.from({ length: 10 }, (_, i) => control.request('POST', `/agents/${ids[i % 2]}/scale`, { token, body: { direction: 'up', count: 1 } })),
      );
      const accepted = attempts.filter((r) => r.status === 200);
      const refused = attempts.filter((r) => r.status === 403);
      assert.equal(accepted.length, 1, JSON.stringify(attempts.map((r) => r.status)));
      assert.equal(refused.length, 9);
      for (const response of refused) {
        assert.equal(response.body.code, 'QUOTA_EXCEEDED');
        assert.deepEqual(response.body.details, { limit: 'max_replicas', value: 3, requested: 4 });
      }
      await waitFor('3 running replicas', async () => {
        const agents = await Promise.all(ids.map(async (id) => (await control.request('GET', `/agents/${id}`, { token })).body));
        return agents.reduce((sum, a) => sum + a.replicas, 0) === 3 && agents.every((a) => a.status === 'running') ? true : undefined;
      });
      assert.equal(ids.flatMap((id) => containersOf(id)).length, 3);
      const usage = await control.request('GET', '/account/usage', { token });
      assert.equal(usage.body.usage.replicas, 3);
      assert.equal(usage.body.usage.vcpu, 1.5);
      assert.equal(usage.body.usage.memory_mb, 384);
    });

    it('refuses a create or redeploy past a plan limit before anything starts', async () => {
      const { token } = await control.signUp();
      const tooMany = await control.request('POST', '/agents', { token, body: { name: 'big', deploy: { replicas: 4 } } });
      assert.equal(tooMany.status, 403);
      assert.equal(tooMany.body.details.limit, 'max_replicas');
      const created = await control.request('POST', '/agents', { token, body: { name: 'small', deploy: { replicas: 1 } } });
      const bigger = await control.request('POST', `/agents/${created.body.id}/deploy`, { token, body: { resources: { cpu: 2 } } });
      assert.equal(bigger.status, 403);
      assert.equal(bigger.body.details.limit, 'max_replica_cpu');
      const agent = await control.request('GET', `/agents/${created.body.id}`, { token });
      assert.equal(agent.body.version, created.body.version, 'a refused redeploy changes nothing');
    });
  });

  describe('a crash of the control API mid-deploy', () => {
    let first: TestControl | undefined;
    let second: TestControl | undefined;
    after(async () => {
      await second?.close();
    });

    it('loses nothing: the restarted control API adopts, restarts and removes containers as Postgres says', async () => {
      first = await startControl({}, { orchestrate: true });
      const { token } = await first.signUp();
      const kept = await first.request('POST', '/agents', { token, body: { name: 'kept', deploy: { replicas: 2 } } });
      const doomed = await first.request('POST', '/agents', { token, body: { name: 'doomed', deploy: { replicas: 1 } } });
      await waitFor('both agents placed', async () => (containersOf(kept.body.id).length === 2 && containersOf(doomed.body.id).length === 1 ? true : undefined));
      const beforeCrash = containersOf(kept.body.id).sort();
      await first.crash();

      // While the control API is down: one replica dies, and the other agent is deleted from Postgres.
      podman(['rm', '--force', '--time', '0', beforeCrash[0]!]);
      await first.db.destroy().catch(() => undefined);
      const { connectDatabase } = await import('../control/db/database.js');
      const templateUrl = process.env.TEST_TEMPLATE_DATABASE_URL!;
      const db = connectDatabase(templateUrl.replace(/\/[^/]+$/, `/${first.database}`), { min: 0, max: 1 });
      await db('agents').where({ id: doomed.body.id }).delete();
      await db.destroy();

      second = await startControl({}, { orchestrate: true, resume: { database: first.database } });
      const agent = await waitFor('the kept agent running with 2 replicas', async () => {
        const response = await second!.request('GET', `/agents/${kept.body.id}`, { token });
        return response.body.status === 'running' && response.body.replicas === 2 ? response.body : undefined;
      });
      assert.equal(agent.version, kept.body.version);
      const afterRestart = containersOf(kept.body.id).sort();
      assert.equal(afterRestart.length, 2);
      assert.ok(afterRestart.includes(beforeCrash[1]!), 'the surviving replica was adopted, not replaced');
      await waitFor('the deleted agent\'s container removed', async () => (containersOf(doomed.body.id).length === 0 ? true : undefined));
      await waitFor('the deleted agent\'s network removed', async () => (networkExists(`agent-${doomed.body.id}`) ? undefined : true));
    });
  });
});
