import { readFile, stat } from 'node:fs/promises';

/** The runtime's credential for agent services; `reload` when the one it gave was refused. */
export interface TokenSource {
  current(): Promise<string>;
  reload(): Promise<string>;
}

/** A problem reading the token. Its message names the file, never the token. */
export class TokenFileError extends Error {
  override readonly name = 'TokenFileError';
}

/** How often the file is looked at again for a new token, at most. */
export const TOKEN_FILE_RECHECK_MS = 1_000;

/**
 * The bearer token in the file the platform keeps fresh (AGENT_SERVICES_TOKEN_FILE): it
 * rewrites the file well before the token expires (on Nomad at about half its remaining
 * life, a TTL being 60 s at least: docs/nomad.md), by rename or in place: Nomad rewrites a
 * workload identity's file in place (hashicorp/nomad, client/allocrunner/taskrunner/
 * identity_hook.go `setAltToken` → helper/users/lookup.go `WriteFileFor` → os.WriteFile, which
 * truncates, then writes), so a read can find it empty or, in principle, cut short. The file is read
 * again when a stat shows another file or another write (inode, size, modification or
 * change time), and the stat is taken at most once a `recheckMs`, shared by the calls made
 * meanwhile: a stat goes through libuv's thread pool, and its answer waits in the event
 * loop behind the invokes' work, which under the sessions benchmark's load put 1.25 ms at
 * p50 and tens of ms at p99 before each call was sent (docs/decisions.md). Timestamps can
 * be too coarse to show two writes close together, and a new token can land between two
 * stats, so a token agent services refuse is read again at once regardless (`reload`).
 */
export class BearerTokenFile implements TokenSource {
  private cached: { token: string; stamp: string } | undefined;
  /** When the file was last looked at, on `now`'s clock. */
  private checkedAt = Number.NEGATIVE_INFINITY;
  private checking: Promise<string> | undefined;

  constructor(
    private readonly path: string,
    private readonly recheckMs = TOKEN_FILE_RECHECK_MS,
    private readonly now: () => number = () => performance.now(),
  ) {}

  current(): Promise<string> {
    if (this.cached !== undefined && this.now() - this.checkedAt < this.recheckMs) return Promise.resolve(this.cached.token);
    this.checking ??= this.check().finally(() => {
      this.checking = undefined;
    });
    return this.checking;
  }

  async reload(): Promise<string> {
    return this.read(await this.stamp().catch(() => undefined));
  }

  private async check(): Promise<string> {
    const stamp = await this.stamp().catch(() => undefined);
    if (this.cached !== undefined && (stamp === undefined || stamp === this.cached.stamp)) {
      this.checkedAt = this.now();
      return this.cached.token;
    }
    return this.read(stamp);
  }

  private async read(stamp: string | undefined): Promise<string> {
    const token = await readFile(this.path, 'utf8').then(
      (text) => text.trim(),
      (error: NodeJS.ErrnoException) => {
        // Between the platform's removal and rename the file can be briefly absent: the token held still works.
        if (this.cached !== undefined) return this.cached.token;
        throw new TokenFileError(`the agent services token file ${this.path} cannot be read (${error.code ?? error.name})`);
      },
    );
    if (token === '') {
      // A file caught mid-write; keep what was held and look again next time (no stamp kept).
      if (this.cached !== undefined) return this.cached.token;
      throw new TokenFileError(`the agent services token file ${this.path} is empty`);
    }
    if (stamp !== undefined) {
      this.cached = { token, stamp };
      this.checkedAt = this.now();
    }
    return token;
  }

  private async stamp(): Promise<string> {
    const info = await stat(this.path, { bigint: true });
    return `${info.ino}:${info.size}:${info.mtimeNs}:${info.ctimeNs}`;
  }
}
