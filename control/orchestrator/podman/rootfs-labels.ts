import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { PodmanInfo } from './host-info.js';

/** Gives a directory tree, recursively, the SELinux label a container may run files from. */
export type LabelForContainers = (directory: string) => Promise<void>;

/**
 * What the probes' `--rootfs` directories need on an SELinux host (probe-root.ts, for the
 * isolation check and the checkpoint probe). A confined container (container_t) may run
 * only files labelled for containers, and podman does not relabel a rootfs as it does a
 * bind mount with `:Z`: its documentation of --rootfs says "On SELinux systems, the rootfs needs the correct label,
 * which is by default unconfined_u:object_r:container_file_t:s0"
 * (containers/podman, docs/source/markdown/options/rootfs.md). Our roots are made under
 * PODMAN_STATE_DIR, in /run (var_run_t): unlabelled, the probe's busybox would be refused,
 * the isolation check could not run, and every replica would be refused with it.
 *
 * Whether SELinux is on is podman's own answer (`podman info`, Host.Security.SELinuxEnabled,
 * filled by go-selinux's `GetEnabled` in libpod/info_linux.go), the same test podman makes
 * before it relabels a bind mount (libpod/container_internal_common.go, `(*Container).relabel`).
 * The field is in podman 4.3.1, this project's, and in podman's main branch alike.
 */
export class RootfsLabels {
  constructor(
    private readonly info: PodmanInfo,
    private readonly labelForContainers: LabelForContainers,
  ) {}

  /** Labels `root` for containers where SELinux is on; nothing elsewhere. Throws when labelling fails, or when podman cannot say. */
  async prepare(root: string): Promise<void> {
    if ((await this.info.host()).selinuxEnabled) await this.labelForContainers(root);
  }
}

const run = promisify(execFile);

/** chcon(1) with the label podman documents for a rootfs: type container_file_t, level s0, which every container's categories dominate. */
export function chconForContainers(environment: Record<string, string>): LabelForContainers {
  return async (directory) => {
    await run('chcon', ['-R', '-t', 'container_file_t', '-l', 's0', '--', directory], { env: environment, timeout: 30_000 });
  };
}
