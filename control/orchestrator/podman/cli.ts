import { execFile, spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';

export class PodmanError extends Error {
  constructor(readonly args: string[], readonly stderr: string, readonly exitCode: number | null) {
    super(`podman ${args[0]} failed: ${stderr.trim().split('\n').slice(-3).join(' ') || `exit ${exitCode}`}`);
    this.name = 'PodmanError';
  }
}

export interface PodmanOutput {
  stdout: string;
  stderr: string;
}

/**
 * Runs podman commands with a deadline each. Arguments are passed as an array (no
 * shell), and the OCI runtime chosen at start is put in front of every command. podman
 * gets `environment` (child-environment.ts), never the control API's own.
 */
export class PodmanCli {
  constructor(
    private readonly binary: string,
    private readonly globalArgs: string[],
    private readonly environment: Readonly<Record<string, string>>,
    private readonly defaultTimeoutMs = 60_000,
  ) {}

  /** `env` adds variables to podman's environment for this command (for `--env KEY` without a value). */
  run(args: string[], timeoutMs = this.defaultTimeoutMs, env: Record<string, string> = {}): Promise<PodmanOutput> {
    return new Promise((resolve, reject) => {
      execFile(
        this.binary,
        [...this.globalArgs, ...args],
        { timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024, killSignal: 'SIGKILL', env: { ...this.environment, ...env } },
        (error, stdout, stderr) => {
          if (error) {
            const timedOut = (error as { killed?: boolean }).killed;
            reject(new PodmanError(args, timedOut ? `timed out after ${timeoutMs} ms` : stderr || error.message, typeof error.code === 'number' ? error.code : null));
          } else {
            resolve({ stdout, stderr });
          }
        },
      );
    });
  }

  /** A long-running podman command (`events`) whose output is read as it comes; no deadline. */
  stream(args: string[]): ChildProcessWithoutNullStreams {
    return spawn(this.binary, [...this.globalArgs, ...args], { env: { ...this.environment } });
  }

  async json<T>(args: string[], timeoutMs?: number): Promise<T> {
    const { stdout } = await this.run(args, timeoutMs);
    return (stdout.trim() ? JSON.parse(stdout) : []) as T;
  }
}
