import { execFileSync } from 'node:child_process';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import packageJson from '../../package.json' with { type: 'json' };

/** The major version of the API: the /v1 prefix of every path. */
export const API_VERSION = '1';

/** The platform's release: package.json's version. */
export const RELEASE_VERSION: string = packageJson.version;

/**
 * The licence the document states: package.json's `license`, or npm's UNLICENSED (no
 * licence granted) while it names none, as an SPDX custom reference.
 */
export const RELEASE_LICENSE: { name: string; identifier: string } = (() => {
  const name = (packageJson as { license?: string }).license ?? 'UNLICENSED';
  return { name, identifier: name === 'UNLICENSED' ? 'LicenseRef-UNLICENSED' : name };
})();

let commit: string | null | undefined;

/**
 * The git commit the control API runs from, or null where there is none to ask (an image
 * built without .git, or no git): asked once, within a second, and never again.
 */
export function sourceCommit(): string | null {
  if (commit !== undefined) return commit;
  try {
    const output = execFileSync('git', ['rev-parse', 'HEAD'], {
      cwd: dirname(fileURLToPath(import.meta.url)),
      encoding: 'utf8',
      timeout: 1000,
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
    commit = /^[0-9a-f]{40,64}$/.test(output) ? output : null;
  } catch {
    commit = null;
  }
  return commit;
}
