import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { RegistryCredential } from '../../domain/registry-auth.js';
import type { SecretScratch } from './secret-scratch.js';

/**
 * A containers-auth.json (containers/image docs/containers-auth.json.5.md) holding one
 * credential, keyed by its registry host so podman sends it nowhere else; `null` gives a
 * file with no credential at all, so a pull without one does not fall back to the host's
 * own auth file (the operator's credentials). `auth` is base64 of `user:password`; an
 * identity token goes in `identitytoken`, with `auth` still a valid `user:` pair, since
 * containers/image skips an entry whose `auth` has no colon (pkg/docker/config, `decodeDockerAuth`).
 */
export function authFileContent(credential: RegistryCredential | null): string {
  if (!credential) return JSON.stringify({ auths: {} });
  const entry =
    'identityToken' in credential
      ? { auth: Buffer.from('<token>:').toString('base64'), identitytoken: credential.identityToken }
      : { auth: Buffer.from(`${credential.username}:${credential.password}`).toString('base64') };
  return JSON.stringify({ auths: { [credential.registry]: entry } });
}

/**
 * Runs `use` with the path of a 0600 auth file in a fresh 0700 directory of `scratch`,
 * removed after whatever happens: the credential reaches podman as `--authfile <path>`,
 * never on its command line or in its environment, and is on disk only while the pull runs
 * (or, if the control API is killed meanwhile, until its next start).
 */
export function withAuthFile<T>(scratch: SecretScratch, credential: RegistryCredential | null, use: (path: string) => Promise<T>): Promise<T> {
  return scratch.use((directory) => {
    const path = join(directory, 'auth.json');
    writeFileSync(path, authFileContent(credential), { mode: 0o600 });
    return use(path);
  });
}
