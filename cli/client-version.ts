import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * agentctl's own version: the repository's package.json, found by walking up from this
 * file, which is cli/ when run through tsx and dist/cli/ once compiled.
 */
export function clientVersion(): string {
  for (let directory = dirname(fileURLToPath(import.meta.url)); ; directory = dirname(directory)) {
    try {
      const manifest = JSON.parse(readFileSync(join(directory, 'package.json'), 'utf8')) as { bin?: Record<string, string>; version?: string };
      if (manifest.bin?.agentctl && manifest.version) return manifest.version;
    } catch {
      // no package.json here, or another package's: look further up
    }
    if (dirname(directory) === directory) return 'unknown';
  }
}
