import packageJson from '../../package.json' with { type: 'json' };

/**
 * The default runtime's image on this host: what runtime-image/scripts/build-image.sh tags
 * (so `npm run up` builds it) and RUNTIME_IMAGE defaults to. Tagged with the package
 * version, never "latest": Nomad's docker driver pulls a "latest" image on every start,
 * whatever the node holds, and images change only with a new tag.
 */
export const LOCAL_RUNTIME_IMAGE = `localhost/agent-runtime:${packageJson.version}`;

/**
 * Why Nomad could not start agents from `image` as it is named, or null. Nomad's docker
 * driver uses an image on the node only when its tag is not "latest", and an untagged
 * reference means "latest" (drivers/docker/driver.go, `createImage`; drivers/docker/
 * utils.go, `parseDockerImage`): such an image is pulled at every start, so one loaded on the
 * nodes fails to pull, and one in a registry changes under running agents. A digest pins it.
 */
export function mutableImageProblem(image: string): string | null {
  const [name, digest] = image.split('@') as [string, string | undefined];
  if (digest !== undefined) return null;
  const colon = name.lastIndexOf(':');
  const tag = colon > name.lastIndexOf('/') ? name.slice(colon + 1) : null;
  if (tag !== null && tag !== 'latest') return null;
  return `${tag === null ? 'untagged' : 'tagged "latest"'}, which Nomad's docker driver pulls at every start instead of using the node's copy: name an immutable tag or a digest (npm run images -- push prints them)`;
}
