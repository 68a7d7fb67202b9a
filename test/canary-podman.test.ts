import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import pino from 'pino';
import { systemClock } from '../contract/clock.js';
import { readSettings } from '../contract/settings-reader.js';
import type { JobSpec, JobStatus, Replica } from '../control/domain/job.js';
import { podmanEnvironmentOf } from '../control/orchestrator/podman/child-environment.js';
import { PodmanCli } from '../control/orchestrator/podman/cli.js';
import { PodmanDriver } from '../control/orchestrator/podman/driver.js';
import { detectHost } from '../control/orchestrator/podman/host.js';
import { podmanGlobalArgs, readPodmanSettings, type PodmanSettings } from '../control/orchestrator/podman/settings.js';
import { sampleSpec } from './support/nomad-samples.js';
import { containersOf, podmanStates } from './support/podman.js';
import { ensureTestImage, TEST_IMAGE } from './support/test-image.js';
import { waitFor } from './support/wait.js';

/**
 * Issue 36 on real containers, the podman driver alone (no control API): a canary of
 * version 2 runs beside the stable version 1, is aborted (its replicas go at once, the
 * stable ones are not touched), runs again, is adopted whole by a new driver (a restart
 * of the control API) and is promoted (a health-gated rollout).
 */
describe('podman driver: a canary beside the stable version, aborted, then promoted', function () {
  this.timeout(120_000);
  const agentId = `agt_canary${randomBytes(4).toString('hex')}`;
  let settings: PodmanSettings;
  let driver: PodmanDriver;
  const startDriver = () => {
    const started = new PodmanDriver(new PodmanCli(settings.binary, podmanGlobalArgs(settings), settings.environment), settings, systemClock, pino({ level: 'silent' }), []);
    started.start();
    return started;
  };

  before(() => {
    settings = detectHost(
      readSettings(
        {
          ...podmanEnvironmentOf(process.env),
          PODMAN_INSTANCE: `test-canary-${process.pid}`,
          PODMAN_POLL_INTERVAL_MS: '250',
          START_GRACE_SECONDS: '4',
          RESTART_BUDGET: '2',
          STOP_TIMEOUT_SECONDS: '1',
          DRAIN_SECONDS: '0.2',
        },
        readPodmanSettings,
      ),
    );
    ensureTestImage(settings.runtime);
    driver = startDriver();
  });

  after(async () => {
    await driver?.reconcile([]); // removes the agent's containers and network
    await driver?.close();
  });

  const version = (v: number, count: number, stable?: JobSpec): JobSpec =>
    sampleSpec({ agentId, version: v, count, image: TEST_IMAGE, platformImage: true, env: { MODE: 'serve' }, secretEnv: {}, scaling: { enabled: false, min: 1, max: 5 }, stable });

  const idsOf = (replicas: Replica[], v: number) => replicas.filter((r) => r.version === v).map((r) => r.id).sort();

  /** The job once every replica runs and there are `counts[version]` of each version, and no other. */
  function settled(counts: Record<number, number>): Promise<JobStatus> {
    const expected = Object.values(counts).reduce((a, b) => a + b, 0);
    return waitFor(`replicas ${JSON.stringify(counts)} running; podman has ${podmanStates(agentId)}`, async () => {
      const status = await driver.status(agentId);
      if (!status || status.replicas.length !== expected || status.replicas.some((r) => r.state !== 'running')) return undefined;
      const matches = Object.entries(counts).every(([v, n]) => idsOf(status.replicas, Number(v)).length === n);
      return matches && containersOf(agentId).length === expected ? status : undefined;
    }, 60_000, 100);
  }

  it('keeps the stable replicas through the canary and its abort, and retires them only on promotion', async () => {
    await driver.submit(version(1, 2));
    const stable = idsOf((await settled({ 1: 2 })).replicas, 1);

    await driver.submit(version(2, 1, version(1, 2)));
    const canary = await settled({ 1: 2, 2: 1 });
    assert.deepEqual([canary.version, canary.count, canary.stableVersion], [2, 1, 1]);
    assert.deepEqual(idsOf(canary.replicas, 1), stable, 'the stable replicas are the same containers');
    const [canaryReplica] = idsOf(canary.replicas, 2);

    // Abort: the stable spec again. Its submit returns with the canary out of routing; its
    // drain and stop run beside the driver's queue, and the canary goes after them.
    await driver.submit(version(1, 2));
    const leaving = (await driver.status(agentId))!.replicas.find((r) => r.id === canaryReplica);
    assert.deepEqual(leaving && { state: leaving.state, address: leaving.address }, { state: 'stopping', address: null }, 'the canary is out of routing at once');
    const aborted = await settled({ 1: 2 });
    assert.deepEqual(aborted.replicas.map((r) => r.id).sort(), stable, 'the canary is gone after its drain');
    assert.deepEqual([aborted.version, aborted.stableVersion], [1, undefined]);
    assert.ok(aborted.replicas.every((r) => r.state === 'running' && r.restarts === 0), 'the stable replicas were not touched');
    assert.deepEqual(containersOf(agentId).sort(), stable);
    assert.ok(aborted.events.some((e) => e.replicaId === canaryReplica && e.message === 'canary aborted: version 1 serves alone'));

    await driver.submit(version(2, 1, version(1, 2)));
    const again = await settled({ 1: 2, 2: 1 });
    assert.deepEqual(idsOf(again.replicas, 1), stable);
    const [secondCanary] = idsOf(again.replicas, 2);

    // A restart of the control API: a new driver handed the canary's spec adopts both versions' containers.
    await driver.close();
    driver = startDriver();
    await driver.reconcile([version(2, 1, version(1, 2))]);
    const adopted = await settled({ 1: 2, 2: 1 });
    assert.deepEqual([idsOf(adopted.replicas, 1), idsOf(adopted.replicas, 2)], [stable, [secondCanary]], 'adopted, not replaced');
    assert.equal(adopted.stableVersion, 1);

    // Promote: the canary's version at the full count, without `stable`.
    await driver.submit(version(2, 2));
    const promoted = await settled({ 2: 2 });
    assert.ok(idsOf(promoted.replicas, 2).includes(secondCanary!), 'the canary replica stays and serves on');
    assert.deepEqual([promoted.version, promoted.count, promoted.stableVersion], [2, 2, undefined]);
  });
});
