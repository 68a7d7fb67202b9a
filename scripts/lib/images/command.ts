import { parseArgs } from 'node:util';

/** A mistake in how the script was called: exit code 2, the message says what to do. */
export class UsageError extends Error {}

export const IMAGES_USAGE = `usage:
  npm run images -- build [--tag TAG]
      builds the platform image and the runtime image with podman, tagged
      localhost/agent-platform:TAG and localhost/agent-runtime:TAG
  npm run images -- push <registry>/<namespace> [--tag TAG] [--skip-build]
                         [--authfile FILE | --creds USER:PASSWORD] [--tls-verify=true|false] [--cert-dir DIR]
      builds them (unless --skip-build: then the local TAG images are pushed as they are),
      pushes both and prints their references by digest and the Nomad job variables

TAG defaults to <package.json version>-<git short commit>, with -dirty when the work tree has
changes; it may not be "latest". Credentials come from podman's auth file (podman login, or
REGISTRY_AUTH_FILE) unless --authfile or --creds is given; --creds shows the password to
anyone who can list this host's processes, so prefer podman login or --authfile.
--tls-verify and --cert-dir go to podman push as they are (a registry with a private CA:
--cert-dir with its ca.crt).`;

/** Where `push` sends the images: `<registry>/<namespace>/agent-platform` and `.../agent-runtime`. */
export interface PushTarget {
  registry: string;
  namespace: string;
}

export type ImagesCommand =
  | { kind: 'help' }
  | { kind: 'build'; tag: string | null }
  | { kind: 'push'; target: PushTarget; tag: string | null; skipBuild: boolean; podmanArgs: string[] };

// The distribution reference grammar (distribution/reference regexp.go): a path component, and a tag.
const PATH_COMPONENT = /^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$/;
const TAG = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/;

/** `npm run images -- …`'s arguments, checked: every mistake is a UsageError naming it. */
export function parseImagesCommand(argv: string[]): ImagesCommand {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      strict: true,
      options: {
        tag: { type: 'string' },
        'skip-build': { type: 'boolean' },
        authfile: { type: 'string' },
        creds: { type: 'string' },
        'tls-verify': { type: 'string' },
        'cert-dir': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (error) {
    throw new UsageError(`${(error as Error).message}\n\n${IMAGES_USAGE}`);
  }
  const { values, positionals } = parsed;
  const [verb, ...rest] = positionals;
  if (values.help || verb === undefined || verb === 'help') return { kind: 'help' };
  const tag = values.tag ?? null;
  if (tag !== null && (!TAG.test(tag) || tag === 'latest')) {
    throw new UsageError(`--tag ${JSON.stringify(tag)}: a tag is letters, digits, "_", "." and "-" (at most 128, not starting with "." or "-"), and never "latest"`);
  }
  if (verb === 'build') {
    const pushOnly = ['skip-build', 'authfile', 'creds', 'tls-verify', 'cert-dir'].filter((name) => values[name as keyof typeof values] !== undefined);
    if (rest.length > 0 || pushOnly.length > 0) throw new UsageError(`build takes only --tag (got ${[...rest, ...pushOnly.map((name) => `--${name}`)].join(' ')})\n\n${IMAGES_USAGE}`);
    return { kind: 'build', tag };
  }
  if (verb !== 'push') throw new UsageError(`unknown command ${JSON.stringify(verb)}\n\n${IMAGES_USAGE}`);
  if (rest.length !== 1) throw new UsageError(`push takes one <registry>/<namespace>, e.g. registry.example.com/platform\n\n${IMAGES_USAGE}`);
  if (values.authfile !== undefined && values.creds !== undefined) throw new UsageError('give --authfile or --creds, not both');
  const tlsVerify = values['tls-verify'];
  if (tlsVerify !== undefined && tlsVerify !== 'true' && tlsVerify !== 'false') throw new UsageError(`--tls-verify takes true or false (--tls-verify=false), got ${JSON.stringify(tlsVerify)}`);
  const podmanArgs = [
    ...(values.authfile !== undefined ? ['--authfile', values.authfile] : []),
    ...(values.creds !== undefined ? ['--creds', values.creds] : []),
    ...(tlsVerify !== undefined ? [`--tls-verify=${tlsVerify}`] : []),
    ...(values['cert-dir'] !== undefined ? ['--cert-dir', values['cert-dir']] : []),
  ];
  return { kind: 'push', target: parseTarget(rest[0]!), tag, skipBuild: values['skip-build'] ?? false, podmanArgs };
}

/**
 * `registry.example.com:5000/team/sub` → registry and namespace. The first part must be a
 * host (a ".", a ":" or "localhost", as the distribution reference tells a registry from a
 * path): without one, podman would resolve the name through its search list.
 */
export function parseTarget(value: string): PushTarget {
  const [registry, ...path] = value.replace(/\/+$/, '').split('/');
  if (!registry || !(registry.includes('.') || registry.includes(':') || registry === 'localhost')) {
    throw new UsageError(`${JSON.stringify(value)}: start with the registry's host (registry.example.com, 10.0.0.5:5000, localhost:5000), then the namespace`);
  }
  if (path.length === 0) throw new UsageError(`${JSON.stringify(value)}: name a namespace after the registry (${registry}/platform)`);
  const bad = path.find((component) => !PATH_COMPONENT.test(component));
  if (bad !== undefined) throw new UsageError(`${JSON.stringify(value)}: "${bad}" is not a repository path component (lower-case letters and digits, joined by ".", "_", "__" or "-")`);
  return { registry, namespace: path.join('/') };
}
