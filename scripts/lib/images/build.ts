import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { podman } from './podman.js';
import { localReference, ociLabels, type ImageKind, type SourceState } from './release.js';

/**
 * The build scripts, each with its own caching (no build when the source hash label
 * matches): they print the image they built or found on stdout, progress on stderr.
 */
const BUILD_SCRIPTS: Record<ImageKind, string> = {
  platform: 'scripts/build-platform-image.sh',
  runtime: 'runtime-image/scripts/build-image.sh',
};

/**
 * Builds both images with their scripts, then tags each `localhost/agent-<kind>:<tag>`
 * through a `FROM` build that adds only the OCI labels (no layer, so no time): the scripts'
 * own names and caches stay as `npm run up` uses them.
 */
export function buildImages(root: string, source: SourceState, tag: string): Record<ImageKind, string> {
  const built = {} as Record<ImageKind, string>;
  for (const kind of ['runtime', 'platform'] as const) {
    process.stderr.write(`images: building the ${kind} image (${BUILD_SCRIPTS[kind]})\n`);
    const output = execFileSync('bash', [join(root, BUILD_SCRIPTS[kind])], { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
    const image = output.trim().split('\n').pop();
    if (!image) throw new Error(`${BUILD_SCRIPTS[kind]} printed no image name`);
    built[kind] = labelled(image, localReference(kind, tag), ociLabels(kind, source, tag));
  }
  return built;
}

function labelled(from: string, reference: string, labels: Record<string, string>): string {
  const context = mkdtempSync(join(tmpdir(), 'image-labels-'));
  try {
    writeFileSync(join(context, 'Containerfile'), `FROM ${from}\n`);
    podman(['build', '--quiet', '--pull=never', ...Object.entries(labels).flatMap(([key, value]) => ['--label', `${key}=${value}`]), '--tag', reference, context]);
    return reference;
  } finally {
    rmSync(context, { recursive: true, force: true });
  }
}
