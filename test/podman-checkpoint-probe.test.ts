import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { readSettings } from '../contract/settings-reader.js';
import { probeCheckpointRestore } from '../control/orchestrator/podman/checkpoint-probe.js';
import { podmanEnvironmentOf } from '../control/orchestrator/podman/child-environment.js';
import { PodmanCli } from '../control/orchestrator/podman/cli.js';
import { detectHost } from '../control/orchestrator/podman/host.js';
import { PodmanInfo } from '../control/orchestrator/podman/host-info.js';
import { chconForContainers, RootfsLabels } from '../control/orchestrator/podman/rootfs-labels.js';
import { podmanGlobalArgs, readPodmanSettings } from '../control/orchestrator/podman/settings.js';
import { podman } from './support/podman.js';
import { ensureTestImage, TEST_IMAGE } from './support/test-image.js';

/**
 * Issue 40: the podman driver says at start whether a cold-parked replica could be restored
 * from a checkpoint on this host. Its probe must agree with what podman does to an agent-like
 * container here (the test image, run as the driver runs replicas): checkpointed to an
 * archive and restored, or refused. On this project's machines CRIU fails at the dump.
 */
describe('podman checkpoint probe', function () {
  this.timeout(120_000);
  const instance = `test-ckpt-${process.pid}`;
  // PODMAN_STATE_DIR as an operator sets it: the probe works there, not in $TMPDIR.
  const stateDirectory = join(tmpdir(), `ckpt-state-${process.pid}`);
  after(() => rmSync(stateDirectory, { recursive: true, force: true }));
  const settings = () =>
    detectHost(readSettings({ ...podmanEnvironmentOf(process.env), PODMAN_INSTANCE: instance, PODMAN_STATE_DIR: stateDirectory }, readPodmanSettings));

  /** Whether podman checkpoints and restores a running container of the test image, tried by hand. */
  async function checkpointsByHand(runtime: string | null): Promise<boolean> {
    const work = mkdtempSync(join(tmpdir(), 'checkpoint-by-hand-'));
    const names = [`${instance}-by-hand`, `${instance}-by-hand-restored`];
    const run = (args: string[]) => promisify(execFile)('podman', [...(runtime ? ['--runtime', runtime] : []), ...args]);
    try {
      await run(['run', '--detach', '--name', names[0]!, '--network', 'none', '--ulimit', 'nofile=1024:1024', '--ulimit', 'nproc=512:512', TEST_IMAGE]);
      await run(['container', 'checkpoint', '--export', join(work, 'archive.tar'), names[0]!]);
      await run(['container', 'restore', '--import', join(work, 'archive.tar'), '--name', names[1]!]);
      return (await run(['inspect', '--format', '{{.State.Running}}', names[1]!])).stdout.trim() === 'true';
    } catch {
      return false;
    } finally {
      for (const name of names) await run(['rm', '--force', '--time', '0', name]).catch(() => undefined);
      rmSync(work, { recursive: true, force: true });
    }
  }

  it("agrees with podman on this host, names podman's reason when it cannot, and leaves nothing behind", async () => {
    const host = settings();
    ensureTestImage(host.runtime);
    // What a control API killed during its probe would have left: the next probe clears it.
    const probeFiles = join(stateDirectory, 'checkpoint-probe');
    mkdirSync(probeFiles, { recursive: true });
    writeFileSync(join(probeFiles, 'checkpoint.tar'), 'an archive of a killed run');
    const cli = new PodmanCli(host.binary, podmanGlobalArgs(host), host.environment);
    const found = await probeCheckpointRestore(cli, {
      busybox: host.probeBusybox, instance, stateDirectory: host.stateDirectory, nofileLimit: host.nofileLimit, nprocLimit: host.nprocLimit,
    }, new RootfsLabels(new PodmanInfo(cli), chconForContainers(host.environment)));
    const byHand = await checkpointsByHand(host.runtime);
    assert.equal(found.mode, byHand ? 'restore' : 'fresh', JSON.stringify(found));
    if (found.mode === 'fresh') assert.match(found.reason, /^podman container failed: .*(checkpoint|restore)/);
    assert.equal(podman(['ps', '--all', '--filter', `name=${instance}`, '--format', '{{.Names}}']).trim(), '', 'no probe container left');
    assert.ok(!existsSync(probeFiles), 'no probe file left, its own or a killed run\'s');
  });
});
