import type { PodmanCli } from './cli.js';

/** What the driver reads of the host from `podman info`. */
export interface PodmanHostInfo {
  /** Host.Security.SELinuxEnabled: whether the probes' roots need a label (rootfs-labels.ts). */
  selinuxEnabled: boolean;
  /** Host.NetworkBackend: netavark, or cni on an older setup (isolation.ts names it in the firewall's table). */
  networkBackend: string;
}

/** Both fields, space-separated: neither holds a space. Both are in podman 4.3.1, this project's, and in podman's main branch. */
const FORMAT = '{{.Host.Security.SELinuxEnabled}} {{.Host.NetworkBackend}}';

/**
 * `podman info`, asked once for everyone who needs it. The isolation check and the probes'
 * labels each asked on their own at start, a podman process of 0.2 to 0.4 s apiece here.
 * A failed look is not kept: the next caller asks again.
 */
export class PodmanInfo {
  private asked: Promise<PodmanHostInfo> | undefined;

  constructor(private readonly cli: PodmanCli) {}

  host(): Promise<PodmanHostInfo> {
    this.asked ??= this.cli.run(['info', '--format', FORMAT]).then(
      ({ stdout }) => {
        const [selinux, backend] = stdout.trim().split(/\s+/);
        return { selinuxEnabled: selinux === 'true', networkBackend: backend || 'unknown' };
      },
      (error: unknown) => {
        this.asked = undefined;
        throw error;
      },
    );
    return this.asked;
  }
}
