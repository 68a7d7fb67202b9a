import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const made: string[] = [];
// Removed as the test process exits, however the suites went: a suite's own `after` would
// not run for a directory made in a helper, and one that failed its `before` skips it.
process.once('exit', () => {
  for (const directory of made) rmSync(directory, { recursive: true, force: true });
});

/** A new directory under the system's temporary one (`<prefix>-XXXXXX`), removed when the test process exits. */
export function scratchDirectory(prefix: string): string {
  const directory = mkdtempSync(join(tmpdir(), `${prefix}-`));
  made.push(directory);
  return directory;
}
