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

/**
 * The bearer token in the file the platform keeps fresh (AGENT_SERVICES_TOKEN_FILE): it
 * rewrites the file before the token expires, renaming a new file over the old one. The
 * file is read again whenever a stat shows another file or another write (inode, size,
 * modification or change time); a stat is one cheap call per request, the read happens
 * only after a rewrite. Timestamps can be too coarse to show two writes close together,
 * so a token agent services refuse is read again regardless (`reload`).
 */
export class BearerTokenFile implements TokenSource {
  private cached: { token: string; stamp: string } | undefined;

  constructor(private readonly path: string) {}

  async current(): Promise<string> {
    const stamp = await this.stamp().catch(() => undefined);
    if (this.cached !== undefined && (stamp === undefined || stamp === this.cached.stamp)) return this.cached.token;
    return this.read(stamp);
  }

  async reload(): Promise<string> {
    return this.read(await this.stamp().catch(() => undefined));
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
    if (stamp !== undefined) this.cached = { token, stamp };
    return token;
  }

  private async stamp(): Promise<string> {
    const info = await stat(this.path, { bigint: true });
    return `${info.ino}:${info.size}:${info.mtimeNs}:${info.ctimeNs}`;
  }
}
