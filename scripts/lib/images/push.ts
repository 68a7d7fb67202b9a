import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { PushTarget } from './command.js';
import { podman } from './podman.js';
import { pinned, remoteRepository, type ImageKind } from './release.js';

/**
 * Pushes a local image as `<registry>/<namespace>/agent-<kind>:<tag>` and returns it by the
 * digest the registry stored (podman push --digestfile): the manifest as pushed, which can
 * differ from the local one (podman compresses layers on the way).
 */
export function pushImage(kind: ImageKind, local: string, target: PushTarget, tag: string, podmanArgs: string[]): string {
  const remote = `${remoteRepository(kind, target)}:${tag}`;
  const dir = mkdtempSync(join(tmpdir(), 'image-push-'));
  try {
    podman(['tag', local, remote]);
    process.stderr.write(`images: pushing ${remote}\n`);
    const digestFile = join(dir, 'digest');
    podman(['push', '--quiet', '--digestfile', digestFile, ...podmanArgs, remote]);
    const digest = readFileSync(digestFile, 'utf8').trim();
    if (!/^sha256:[a-f0-9]{64}$/.test(digest)) throw new Error(`podman push wrote no digest for ${remote} (got ${JSON.stringify(digest)})`);
    return pinned(kind, target, digest);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
