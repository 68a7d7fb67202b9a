import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

export const ROOT = resolve(import.meta.dirname, '..', '..');
const SHIM = join(ROOT, 'bin', 'agentctl.js');

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * The real `agentctl` (node + the bin shim) as a user runs it, with a config home of
 * its own and no AGENTCTL_* variables from the test's environment unless given.
 */
export class CliUser {
  readonly configHome = mkdtempSync(join(tmpdir(), 'agentctl-'));

  constructor(private readonly env: Record<string, string>) {}

  get configPath(): string {
    return join(this.configHome, 'agentctl', 'config.json');
  }

  private environment(extra: Record<string, string>): NodeJS.ProcessEnv {
    const inherited = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('AGENTCTL_')));
    return { ...inherited, XDG_CONFIG_HOME: this.configHome, ...this.env, ...extra };
  }

  /** Runs to the end; stdin is closed (not a terminal). */
  run(args: string[], extra: Record<string, string> = {}): Promise<CliResult> {
    const child = this.start(args, extra);
    return new Promise((done, fail) => {
      let stdout = '';
      let stderr = '';
      child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk));
      child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk));
      child.on('error', fail);
      child.on('close', (code) => done({ code, stdout, stderr }));
    });
  }

  /** Parses stdout of a run that must succeed. */
  async json<T = any>(args: string[], extra: Record<string, string> = {}): Promise<T> {
    const result = await this.run([...args, '--json'], extra);
    if (result.code !== 0) throw new Error(`agentctl ${args.join(' ')} exited ${result.code}: ${result.stderr}`);
    return JSON.parse(result.stdout) as T;
  }

  /** Starts a long-running command (logs --follow, metrics --watch) for the test to read and stop. */
  start(args: string[], extra: Record<string, string> = {}): ChildProcess {
    return spawn(process.execPath, [SHIM, ...args], { cwd: ROOT, env: this.environment(extra), stdio: ['ignore', 'pipe', 'pipe'] });
  }
}

/** Collects a running command's stdout until `until` matches it, then stops the command. */
export function readUntil(child: ChildProcess, until: RegExp): Promise<string> {
  return new Promise((done, fail) => {
    let stdout = '';
    let stderr = '';
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk));
    child.stdout!.on('data', (chunk: Buffer) => {
      stdout += chunk;
      if (until.test(stdout)) {
        child.kill('SIGINT');
        done(stdout);
      }
    });
    child.on('close', (code) => fail(new Error(`ended (${code}) before ${until}: ${stdout} ${stderr}`)));
  });
}
