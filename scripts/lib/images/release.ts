import { execFileSync } from 'node:child_process';
import type { PushTarget } from './command.js';

/** The two images a release is made of, by their repository name. */
export const IMAGE_NAMES = { platform: 'agent-platform', runtime: 'agent-runtime' } as const;
export type ImageKind = keyof typeof IMAGE_NAMES;

/** What the images are built from: the package version and the commit. */
export interface SourceState {
  version: string;
  commit: string;
  /** The commit's time (ISO 8601): the images' `created` label, the same for every build of it. */
  committedAt: string;
  /** Files differ from the commit (tracked changes or untracked files). */
  dirty: boolean;
}

/** `git` in `cwd`; a clear error when it is not a repository. */
export function sourceState(cwd: string, version: string): SourceState {
  const git = (args: string[]) => {
    try {
      return execFileSync('git', args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
    } catch (error) {
      throw new Error(`git ${args.join(' ')} failed in ${cwd}: the images are tagged with the commit, so build from a git work tree (${(error as Error).message.split('\n')[0]})`);
    }
  };
  return {
    version,
    commit: git(['rev-parse', 'HEAD']),
    committedAt: git(['show', '-s', '--format=%cI', 'HEAD']),
    dirty: git(['status', '--porcelain']) !== '',
  };
}

/**
 * The tag of both images: `<version>-<short commit>`, `-dirty` added when the work tree
 * differs from the commit, so a tag names one source and is never reused for another
 * (nomad-jobs/*.nomad.hcl take it by digest in the end: see `pinned`).
 */
export const releaseTag = (source: Pick<SourceState, 'version' | 'commit' | 'dirty'>): string =>
  `${source.version}-${source.commit.slice(0, 7)}${source.dirty ? '-dirty' : ''}`;

/** Where `build` leaves an image, and `push --skip-build` takes it from. */
export const localReference = (kind: ImageKind, tag: string) => `localhost/${IMAGE_NAMES[kind]}:${tag}`;

export const remoteRepository = (kind: ImageKind, target: PushTarget) => `${target.registry}/${target.namespace}/${IMAGE_NAMES[kind]}`;

/** The image as pushed, by digest: what the Nomad job variables take, immune to a tag moved later. */
export const pinned = (kind: ImageKind, target: PushTarget, digest: string) => `${remoteRepository(kind, target)}@${digest}`;

/** The OCI annotations' keys (opencontainers/image-spec annotations.md), as image labels. */
export function ociLabels(kind: ImageKind, source: SourceState, tag: string): Record<string, string> {
  return {
    'org.opencontainers.image.title': IMAGE_NAMES[kind],
    'org.opencontainers.image.version': tag,
    'org.opencontainers.image.revision': source.commit,
    'org.opencontainers.image.created': source.committedAt,
  };
}

/** The `-var` arguments of `nomad job run` for nomad-jobs/*.nomad.hcl. */
export const nomadVariables = (platform: string, runtime: string) => `-var image=${platform} -var runtime_image=${runtime}`;
