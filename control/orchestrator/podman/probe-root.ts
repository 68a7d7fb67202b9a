import { chmodSync, copyFileSync, mkdirSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import type { RootfsLabels } from './rootfs-labels.js';

/**
 * A probe container's root (`--rootfs`), holding only /bin/busybox and an empty /www for
 * busybox httpd: no image is needed, nor pulled. Made at `root`, then labelled for containers
 * where SELinux is on (rootfs-labels.ts), since podman never relabels a rootfs.
 *
 * The program is copied under a temporary name and renamed into place: a running container
 * (the isolation check's canary, which the next run of the control API reuses) may be
 * executing the file it replaces, and writing over it fails on kernels before 6.11 (open(2),
 * ETXTBSY) and changes the program under the running process on later ones (seen on 6.18),
 * while a rename only swaps the name.
 */
export async function busyboxRoot(root: string, busybox: string, labels: RootfsLabels): Promise<string> {
  for (const dir of [root, join(root, 'bin'), join(root, 'www')]) {
    mkdirSync(dir, { recursive: true });
    chmodSync(dir, 0o755);
  }
  const program = join(root, 'bin/busybox');
  const partial = `${program}.${process.pid}`;
  copyFileSync(busybox, partial);
  chmodSync(partial, 0o755);
  renameSync(partial, program);
  await labels.prepare(root);
  return root;
}
