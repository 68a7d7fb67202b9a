import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { SecretBox } from '../control/crypto/secret-box.js';
import { connectDatabase } from '../control/db/database.js';
import { startControl, type TestControl } from './support/control-harness.js';
import { containersOf, networkExists, podman } from './support/podman.js';
import { parseSamples, sampleValue } from './support/prometheus-text.js';
import { waitFor } from './support/wait.js';

const runningContainersOf = (agentId: string) =>
  podman(['ps', '--filter', `label=platform.agent-id=${agentId}`, '--format', '{{.Names}}']).split('\n').filter(Boolean).sort();

/**
 * The user's view of an agent whose job cannot be built, on podman: the control API
 * restarts and one agent's model key no longer opens (sealed under a key gone from
 * MASTER_KEYS). Its container runs on through every reconcile pass, the other agent is
 * adopted, and a deleted agent's container is removed as before.
 */
describe('agents on podman: an agent whose job cannot be built after a restart', function () {
  this.timeout(240_000);
  let first: TestControl | undefined;
  let second: TestControl | undefined;
  after(async () => {
    await second?.close();
  });

  it('keeps its container and network running through reconcile passes, adopts the others and removes a deleted agent', async () => {
    first = await startControl({}, { orchestrate: true });
    const { token } = await first.signUp();
    const create = async (name: string) => {
      const created = await first!.request('POST', '/agents', { token, body: { name, api_key: `sk-${name}-model-key`, deploy: { replicas: 1, resources: { cpu: 0.5, memory_mb: 128 } } } });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      return created.body.id as string;
    };
    const [healthy, broken, deleted] = [await create('healthy'), await create('broken'), await create('deleted')] as [string, string, string];
    await waitFor('the three agents running', async () => {
      const statuses = await Promise.all([healthy, broken, deleted].map(async (id) => (await first!.request('GET', `/agents/${id}`, { token })).body.status));
      return statuses.every((status) => status === 'running') ? true : undefined;
    }, 120_000);
    const before = { healthy: runningContainersOf(healthy), broken: runningContainersOf(broken) };
    await first.crash();

    // While the control API is down: the broken agent's key is now under a master key it
    // does not hold (as if that key left MASTER_KEYS too early), and one agent is deleted.
    const db = connectDatabase(first.config.databaseUrl, { min: 0, max: 1 });
    await db('agents').where({ id: broken }).update({ api_key_sealed: new SecretBox([randomBytes(32)]).seal('sk-broken-model-key') });
    await db('agents').where({ id: deleted }).delete();
    await db.destroy();

    // The harness fails here unless the first reconcile pass ran to its end.
    second = await startControl({}, { orchestrate: true, resume: { database: first.database } });
    await second.control.loops.reconciler.runOnce();

    // Each pass's sweep removes, before it returns, every container the driver does not claim.
    assert.deepEqual(containersOf(deleted), [], "the deleted agent's container is removed");
    assert.equal(networkExists(`agent-${deleted}`), false, "the deleted agent's network is removed");
    assert.deepEqual(runningContainersOf(broken), before.broken, "the broken agent's container runs on, the same one");
    assert.equal(networkExists(`agent-${broken}`), true, "the broken agent's network is kept");
    await waitFor('the healthy agent adopted and running', async () => {
      const agent = (await second!.request('GET', `/agents/${healthy}`, { token })).body;
      return agent.status === 'running' && agent.replicas === 1 ? true : undefined;
    });
    assert.deepEqual(runningContainersOf(healthy), before.healthy, 'the healthy replica was adopted, not replaced');
    // Without a job it could build, this control API does not follow the broken agent's replica (docs/orchestration.md, "Recovery").
    assert.equal((await second.request('GET', `/agents/${broken}`, { token })).body.status, 'pending');

    const samples = parseSamples(await second.control.metrics.registry.metrics());
    assert.equal(sampleValue(samples, 'agent_platform_control_reconcile_unbuildable_jobs_total'), 2, 'one agent kept in each of the two passes');
  });
});
