import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import pino from 'pino';
import { masterKeyId, SecretBox } from '../control/crypto/secret-box.js';
import type { JobSpec } from '../control/domain/job.js';
import type { Orchestrator, ReconcileOptions } from '../control/orchestrator/types.js';
import type { ReconcilePassed } from '../control/services/agent-events.js';
import { AgentRunner } from '../control/services/agent-runner.js';
import { createAgent } from './support/control-api.js';
import { startControl, type TestControl } from './support/control-harness.js';

/** An orchestrator that runs nothing and records each reconcile it is asked for. */
function recordingOrchestrator() {
  const reconciles: { specs: JobSpec[]; options: ReconcileOptions | undefined }[] = [];
  const orchestrator = {
    name: 'recording',
    reconcile: async (specs: JobSpec[], options?: ReconcileOptions) => void reconciles.push({ specs, options }),
    status: async () => null,
    onChange: () => undefined,
  } as Partial<Orchestrator> as Orchestrator;
  return { orchestrator, reconciles };
}

/**
 * One agent's job cannot be built (its model key is sealed under a master key the control
 * API no longer holds): the reconcile pass goes on for the others and tells the
 * orchestrator to keep what runs for that agent, rather than failing, or removing it.
 * The drivers' side of `keep` is tested in test/nomad-reconcile-keep.test.ts and
 * test/reconcile-unbuildable-podman.test.ts.
 */
describe('reconcile: an agent whose job cannot be built', () => {
  let control: TestControl;

  before(async () => {
    control = await startControl();
  });
  after(async () => control?.close());

  it('hands over every other agent, keeps that one, and logs its id and the reason without any value', async () => {
    const { token } = await control.signUp();
    const healthy = await createAgent(control, token, { name: 'healthy', api_key: 'sk-healthy-model-key', deploy: { replicas: 1 } });
    const broken = await createAgent(control, token, { name: 'broken', api_key: 'sk-broken-model-key', deploy: { replicas: 1 } });
    // As if sealed before its key left MASTER_KEYS (the rotation skipped, or rolled back).
    const goneKey = randomBytes(32);
    const sealedUnderGoneKey = new SecretBox([goneKey]).seal('sk-broken-model-key');
    await control.db('agents').where({ id: broken.id }).update({ api_key_sealed: sealedUnderGoneKey });

    const lines: string[] = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(line) });
    const { orchestrator, reconciles } = recordingOrchestrator();
    const jobSettings = { runtimeImage: 'localhost/agent-runtime:latest', urlOf: (slug: string) => `https://${slug}.agents.test` };
    const runner = new AgentRunner({
      db: control.db, orchestrator, box: new SecretBox(control.config.masterKeys), jobSettings, clock: control.clock, logger, edge: control.control.services.edge, concurrency: 1,
    });
    const passes: ReconcilePassed[] = [];
    runner.onReconcilePassed((pass) => passes.push(pass));

    await runner.reconcileAll();

    assert.equal(reconciles.length, 1);
    const [{ specs, options }] = reconciles as [(typeof reconciles)[0]];
    assert.deepEqual(specs.map((spec) => spec.agentId), [healthy.id], 'the healthy agent is reconciled as usual');
    assert.equal(specs[0]!.secretEnv.OPENAI_API_KEY, 'sk-healthy-model-key');
    assert.deepEqual(options?.keep, [broken.id], 'the broken agent is kept: neither submitted nor removed');
    assert.deepEqual(passes, [{ agents: 2, unbuildable: 1 }]);

    const warnings = lines.map((line) => JSON.parse(line)).filter((entry) => entry.level === 40);
    assert.equal(warnings.length, 1, lines.join(''));
    assert.equal(warnings[0].agent_id, broken.id);
    assert.match(warnings[0].error, new RegExp(`master key ${masterKeyId(goneKey)}, which MASTER_KEYS does not hold`));
    const logged = lines.join('');
    for (const value of ['sk-broken-model-key', 'sk-healthy-model-key', sealedUnderGoneKey]) assert.ok(!logged.includes(value), `the log holds ${value}`);
  });
});
