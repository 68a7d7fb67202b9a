/**
 * How Nomad's docker driver gets a task's image, ported for the fake client:
 *
 * - drivers/docker/utils.go, `parseDockerImage`: a reference with a digest has no tag; one
 *   with neither tag nor digest has the tag "latest".
 * - drivers/docker/driver.go, `createImage`: the image on the node is used only when the
 *   tag is not "latest" and `force_pull` is off; otherwise (or when it is not on the node)
 *   the driver pulls, whatever the node holds. `pullImage` emits "Downloading image" first.
 * - drivers/docker/coordinator.go, `pullImageImpl` and `recoverablePullError`: a pull that
 *   fails is "Failed to pull `<image>`: <the daemon's error>".
 *
 * So an image tagged "latest", or untagged, starts only if a registry serves it: one
 * `docker load`ed on every node is pulled anyway, and the pull fails.
 */
export interface ImageSources {
  /** The image is in the node's image store (loaded, or pulled before). */
  onNode: boolean;
  /** A registry the node can reach serves this reference. */
  served: boolean;
  /** The task's `force_pull`. */
  forcePull: boolean;
}

export interface ImageStep {
  /** The driver pulls (and emits "Downloading image"). */
  pulls: boolean;
  /** The image is there to start the task from: on the node and not pulled, or pulled. */
  available: boolean;
}

export function createImage(image: string, sources: ImageSources): ImageStep {
  const pulls = sources.forcePull || parseDockerImage(image).tag === 'latest' || !sources.onNode;
  return { pulls, available: pulls ? sources.served : true };
}

/** The message of a pull that failed: recoverablePullError's, around the error a registry that does not serve the image gives. */
export function pullFailure(image: string): string {
  const repository = parseDockerImage(image).repo;
  return `Failed to pull \`${image}\`: Error response from daemon: pull access denied for ${repository}, repository does not exist or may require 'docker login'`;
}

/**
 * drivers/docker/utils.go, `parseDockerImage` (over distribution's reference.ReferenceRegexp):
 * the tag follows the last colon after the last slash (a colon before it is a registry's
 * port); with a digest (`@sha256:…`) the tag is empty, without either it is "latest".
 */
export function parseDockerImage(image: string): { repo: string; tag: string } {
  const [name, digest] = image.split('@') as [string, string | undefined];
  const colon = name.lastIndexOf(':');
  const tagged = colon > name.lastIndexOf('/');
  const repo = tagged ? name.slice(0, colon) : name;
  if (digest !== undefined) return { repo: `${repo}@${digest}`, tag: '' };
  return { repo, tag: tagged ? name.slice(colon + 1) : 'latest' };
}
