import assert from 'node:assert/strict';
import { ManualClock } from './support/manual-clock.js';
import { createLogger } from '../control/config/logger.js';
import type { Orchestrator, ReplicaMetrics } from '../control/orchestrator/types.js';
import type { JobStatus } from '../control/domain/job.js';
import { Autoscaler } from '../control/services/autoscaler.js';
import { startControl, type TestControl } from './support/control-harness.js';
import { createAgent } from './support/control-api.js';

/**
 * AUTOSCALE_CPU_WARMUP_MS: the CPU of a replica younger than the warm-up is its start-up,
 * not its load, and is left out. A driver stand-in reports one replica per agent at 50 %
 * of a core (100 % of its 0.5 vCPU, above the 70 % target): only the agent whose replica
 * is older than the configured warm-up is scaled out.
 */
describe('auto-scaling: the CPU warm-up setting', () => {
  let control: TestControl;

  before(async () => {
    control = await startControl({ AUTOSCALE_CPU_WARMUP_MS: '5000' });
  });
  after(async () => {
    await control?.close();
  });

  it('counts the CPU of replicas older than AUTOSCALE_CPU_WARMUP_MS, and only theirs', async () => {
    assert.equal(control.config.autoscale.cpuWarmupMs, 5000);
    const driverClock = new ManualClock(new Date('2026-01-01T12:00:00Z'));
    const deploy = { replicas: 1, auto_scale: true, min_replicas: 1, max_replicas: 3, resources: { cpu: 0.5, memory_mb: 128 } };
    // One account each, so neither scale-out is held back by the other's share of the plan quota.
    const owners = [await control.signUp(), await control.signUp()];
    const settled = await createAgent(control, owners[0]!.token, { name: 'settled', deploy });
    const young = await createAgent(control, owners[1]!.token, { name: 'young', deploy });
    // Started 10 s and 4 s before the driver's now: one past the 5 s warm-up, one within it.
    const startedAt = new Map([[settled.id, 10_000], [young.id, 4_000]].map(([id, age]) => [id as string, new Date(driverClock.now().getTime() - (age as number))]));
    const driver = {
      status: async (agentId: string): Promise<JobStatus> => ({
        agentId, version: 1, count: 1, events: [],
        replicas: [{ id: `${agentId}-1`, version: 1, state: 'running', address: '10.0.0.2:8080', restarts: 0, startedAt: startedAt.get(agentId)!, error: null }],
      }),
      metrics: async (agentId: string): Promise<ReplicaMetrics[]> => [{ replicaId: `${agentId}-1`, cpuPercent: 50, memoryMb: 64, memoryLimitMb: 128 }],
    } as Partial<Orchestrator> as Orchestrator;

    const autoscaler = new Autoscaler({
      db: control.db, redis: control.redis, driver: { orchestrator: driver, clock: driverClock }, scaling: control.control.services.platformScaling, clock: control.clock, settings: control.config.autoscale, logger: createLogger('silent'),
    });
    await autoscaler.runOnce();

    // deploy.replicas: the count the agent is set to run (`replicas` counts those running).
    const replicas = async (id: string, token: string) => (await control.request<any>('GET', `/agents/${id}`, { token })).body.deploy.replicas;
    assert.equal(await replicas(settled.id, owners[0]!.token), 2, 'the settled replica is at 100 % of its share: one more replica');
    assert.equal(await replicas(young.id, owners[1]!.token), 1, 'the young replica reports its start-up: no CPU signal, no change');
  });
});
