import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildImages } from './lib/images/build.js';
import { IMAGES_USAGE, parseImagesCommand, UsageError, type ImagesCommand } from './lib/images/command.js';
import { imageExists } from './lib/images/podman.js';
import { pushImage } from './lib/images/push.js';
import { localReference, nomadVariables, releaseTag, sourceState, type ImageKind } from './lib/images/release.js';

/**
 * `npm run images -- build` and `npm run images -- push <registry>/<namespace>`: the images
 * a cluster runs, under a tag that names their source and, once pushed, by digest
 * (docs/nomad.md, "Install"). Results go to stdout, progress and podman's messages to stderr.
 */
const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');

function main(command: Exclude<ImagesCommand, { kind: 'help' }>): void {
  const { version } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };
  const source = sourceState(ROOT, version);
  const tag = command.tag ?? releaseTag(source);
  let local: Record<ImageKind, string>;
  if (command.kind === 'push' && command.skipBuild) {
    local = { platform: localReference('platform', tag), runtime: localReference('runtime', tag) };
    const missing = Object.values(local).filter((reference) => !imageExists(reference));
    if (missing.length > 0) throw new UsageError(`--skip-build: ${missing.join(' and ')} not on this host; run npm run images -- build${command.tag ? ` --tag ${tag}` : ''} first, or leave out --skip-build`);
  } else {
    local = buildImages(ROOT, source, tag);
  }
  if (command.kind === 'build') {
    console.log(`${local.platform}\n${local.runtime}`);
    return;
  }
  const platform = pushImage('platform', local.platform, command.target, tag, command.podmanArgs);
  const runtime = pushImage('runtime', local.runtime, command.target, tag, command.podmanArgs);
  console.log(`agent-platform  ${platform}
agent-runtime   ${runtime}

Nomad job variables (nomad-jobs/*.nomad.hcl):
  ${nomadVariables(platform, runtime)}`);
}

try {
  const command = parseImagesCommand(process.argv.slice(2));
  if (command.kind === 'help') console.log(IMAGES_USAGE);
  else main(command);
} catch (error) {
  console.error(`images: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(error instanceof UsageError ? 2 : 1);
}
