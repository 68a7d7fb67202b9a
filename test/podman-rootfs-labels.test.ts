import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PodmanCli } from '../control/orchestrator/podman/cli.js';
import { PodmanInfo } from '../control/orchestrator/podman/host-info.js';
import { chconForContainers, RootfsLabels } from '../control/orchestrator/podman/rootfs-labels.js';
import { podman } from './support/podman.js';

/**
 * The probes run from `--rootfs` directories the control API makes, which podman does not
 * relabel: on an SELinux host they must be labelled for containers first, or the isolation
 * check cannot run and every replica is refused (control/orchestrator/podman/rootfs-labels.ts).
 * This machine has no SELinux, so the labelled case runs against a podman that says it has.
 */
describe('podman driver: labelling the probes’ root directories for SELinux', () => {
  let work: string;
  beforeEach(() => {
    work = mkdtempSync(join(tmpdir(), 'rootfs-labels-'));
  });
  afterEach(() => rmSync(work, { recursive: true, force: true }));

  /** A program at `name` in `work` that appends its arguments as a line to `log`, and prints `output`. */
  const recordingProgram = (name: string, log: string, output = '', exitCode = 0) => {
    const path = join(work, name);
    writeFileSync(path, `#!/bin/sh\necho "$@" >> ${log}\nprintf '%s\\n' '${output}'\nexit ${exitCode}\n`);
    chmodSync(path, 0o755);
    return path;
  };
  const linesOf = (log: string) => {
    try {
      return readFileSync(log, 'utf8').trim().split('\n');
    } catch {
      return [];
    }
  };

  it('labels nothing where podman says SELinux is off, as on this host', async () => {
    const podmanSays = podman(['info', '--format', '{{.Host.Security.SELinuxEnabled}}']).trim();
    const labelled: string[] = [];
    const labels = new RootfsLabels(new PodmanInfo(new PodmanCli('podman', [], { PATH: process.env.PATH ?? '/usr/bin:/bin' })), async (directory) => void labelled.push(directory));
    await labels.prepare(join(work, 'root'));
    assert.deepEqual(labelled, podmanSays === 'true' ? [join(work, 'root')] : [], `podman says SELinux enabled: ${podmanSays}`);
  });

  it('labels each root where podman says SELinux is on, asking podman once, for the network backend too', async () => {
    const podmanLog = join(work, 'podman.log');
    const labelled: string[] = [];
    const info = new PodmanInfo(new PodmanCli(recordingProgram('podman', podmanLog, 'true netavark'), [], {}));
    const labels = new RootfsLabels(info, async (directory) => void labelled.push(directory));
    await labels.prepare('/run/agent-platform-x/probe-root');
    await labels.prepare('/run/agent-platform-x/checkpoint-probe/root');
    assert.deepEqual(labelled, ['/run/agent-platform-x/probe-root', '/run/agent-platform-x/checkpoint-probe/root']);
    assert.deepEqual(await info.host(), { selinuxEnabled: true, networkBackend: 'netavark' }, 'what the isolation check reads');
    assert.deepEqual(linesOf(podmanLog), ['info --format {{.Host.Security.SELinuxEnabled}} {{.Host.NetworkBackend}}']);
  });

  it("reads this host's podman as podman's own templates print it", async () => {
    const said = podman(['info', '--format', '{{.Host.Security.SELinuxEnabled}}|{{.Host.NetworkBackend}}']).trim().split('|');
    const info = await new PodmanInfo(new PodmanCli('podman', [], { PATH: process.env.PATH ?? '/usr/bin:/bin' })).host();
    assert.deepEqual(info, { selinuxEnabled: said[0] === 'true', networkBackend: said[1] });
  });

  it('fails when the label cannot be applied, so that the probe fails closed, and asks podman again after a failed look', async () => {
    const refusing = new RootfsLabels(new PodmanInfo(new PodmanCli(recordingProgram('podman', join(work, 'on.log'), 'true netavark'), [], {})), async () => {
      throw new Error('chcon: failed to change context of probe-root to container_file_t: Operation not permitted');
    });
    await assert.rejects(refusing.prepare('/run/agent-platform-x/probe-root'), /chcon: failed to change context/);

    const failingLog = join(work, 'failing.log');
    const failing = new RootfsLabels(new PodmanInfo(new PodmanCli(recordingProgram('podman', failingLog, '', 125), [], {})), async () => undefined);
    await assert.rejects(failing.prepare('/run/agent-platform-x/probe-root'));
    await assert.rejects(failing.prepare('/run/agent-platform-x/probe-root'));
    assert.equal(linesOf(failingLog).length, 2, 'a failed answer is not kept');
  });

  it('labels with chcon as podman documents for a rootfs: type container_file_t, level s0, the whole tree', async () => {
    const chconLog = join(work, 'chcon.log');
    recordingProgram('chcon', chconLog);
    await chconForContainers({ PATH: work })('/run/agent-platform-x/probe-root');
    assert.deepEqual(linesOf(chconLog), ['-R -t container_file_t -l s0 -- /run/agent-platform-x/probe-root']);
  });
});
