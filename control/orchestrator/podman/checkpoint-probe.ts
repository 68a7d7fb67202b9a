import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { PodmanCli } from './cli.js';
import { busyboxRoot } from './probe-root.js';
import type { RootfsLabels } from './rootfs-labels.js';

/**
 * How a cold-parked replica wakes on this host (issue 40): `restore` when podman can
 * checkpoint a running container with CRIU and restore it, `fresh` otherwise, with podman's
 * reason. Known by effect, not by version numbers: CRIU's own `criu check` passes on hosts
 * where a dump still fails (seen here: CRIU 3.17 cannot read the vDSO of a 6.18 kernel,
 * "Failed to fill self vdso symtable", only at dump).
 */
export type ColdWake = { mode: 'restore' } | { mode: 'fresh'; reason: string };

export interface CheckpointProbeSettings {
  /** A static busybox: the probe's container is one process from a root holding only it. */
  busybox: string;
  instance: string;
  /** The instance's directory (PodmanSettings.stateDirectory), where the probe's files are. */
  stateDirectory: string;
  nofileLimit: number;
  nprocLimit: number;
}

/**
 * Checkpoints a running container (a busybox `sleep`, no network, no image) to an archive,
 * restores it under another name and checks that it runs; everything it made is removed
 * whatever happens. A second or so when it works; a failed checkpoint returns at once.
 * Its files are at one path in the instance's directory, like its containers' names, so
 * what a control API killed meanwhile left is removed by the next probe.
 */
export async function probeCheckpointRestore(cli: PodmanCli, settings: CheckpointProbeSettings, rootfsLabels: RootfsLabels): Promise<ColdWake> {
  const work = join(settings.stateDirectory, 'checkpoint-probe');
  rmSync(work, { recursive: true, force: true });
  mkdirSync(work, { recursive: true });
  const name = `${settings.instance}-checkpoint-probe`;
  const restored = `${name}-restored`;
  const archive = join(work, 'checkpoint.tar');
  try {
    await removeBoth(cli, name, restored);
    const root = await busyboxRoot(join(work, 'root'), settings.busybox, rootfsLabels);
    await cli.run([
      'run', '--detach', '--name', name, '--network', 'none', '--cap-drop', 'all', '--security-opt', 'no-new-privileges',
      '--ulimit', `nofile=${Math.min(settings.nofileLimit, 1024)}:${Math.min(settings.nofileLimit, 1024)}`,
      '--ulimit', `nproc=${settings.nprocLimit}:${settings.nprocLimit}`,
      '--rootfs', root, '/bin/busybox', 'sleep', '3600',
    ]);
    await cli.run(['container', 'checkpoint', '--export', archive, name], 60_000);
    await cli.run(['container', 'restore', '--import', archive, '--name', restored], 60_000);
    const [state] = await cli.json<{ State?: { Running?: boolean } }[]>(['container', 'inspect', restored]);
    return state?.State?.Running ? { mode: 'restore' } : { mode: 'fresh', reason: 'the restored container does not run' };
  } catch (error) {
    return { mode: 'fresh', reason: error instanceof Error ? error.message : String(error) };
  } finally {
    await removeBoth(cli, name, restored);
    rmSync(work, { recursive: true, force: true });
  }
}

/** One `rm` each: podman 4.3 removes none of several names when one of them does not exist. */
const removeBoth = (cli: PodmanCli, ...names: string[]) =>
  Promise.all(names.map((name) => cli.run(['rm', '--force', '--time', '0', name]).catch(() => undefined)));
