import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Where the files that hand a secret to one podman call are written: a replica's env file
 * (its secrets, opened) and a pull's registry auth file. Each call gets a 0700 directory of
 * its own, removed when the call ends. All of them lie in one directory of the instance,
 * which the driver empties at its start: a control API killed during a call (a pull may
 * last minutes) leaves its files there, and the next start removes them. Made in $TMPDIR at
 * large, as they once were, nothing ever did.
 */
export class SecretScratch {
  constructor(private readonly root: string) {}

  /** In the instance's directory (PodmanSettings.stateDirectory). */
  static in(stateDirectory: string): SecretScratch {
    return new SecretScratch(join(stateDirectory, 'secrets'));
  }

  /** At the driver's start, before its first call: no call of this instance is under way. */
  clear(): void {
    rmSync(this.root, { recursive: true, force: true });
  }

  async use<T>(call: (directory: string) => Promise<T>): Promise<T> {
    mkdirSync(this.root, { recursive: true, mode: 0o700 });
    const directory = mkdtempSync(join(this.root, 'call-'));
    try {
      return await call(directory);
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
  }
}
