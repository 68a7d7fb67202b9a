import { spawn, type ChildProcess } from 'node:child_process';
import { join, resolve } from 'node:path';
import { scratchDirectory } from '../../runtime-image/test/helpers/scratch-directory.js';

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
  readonly configHome = scratchDirectory('agentctl');

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

/** A running command's stdout as it grows, for a test that acts between two things it prints. */
export function watchOutput(child: ChildProcess) {
  let stdout = '';
  let stderr = '';
  let ended: number | null | undefined;
  const waiters = new Set<() => void>();
  const wake = () => waiters.forEach((waiter) => waiter());
  child.stdout!.on('data', (chunk: Buffer) => ((stdout += chunk), wake()));
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk));
  child.on('close', (code) => ((ended = code), wake()));
  return {
    /** Resolves with all stdout so far once it matches `pattern`; rejects if the command ends first. */
    until(pattern: RegExp): Promise<string> {
      return new Promise((done, fail) => {
        const check = () => {
          if (pattern.test(stdout)) return waiters.delete(check), done(stdout);
          if (ended !== undefined) return waiters.delete(check), fail(new Error(`ended (${ended}) before ${pattern}: ${stdout} ${stderr}`));
        };
        waiters.add(check);
        check();
      });
    },
    stop: () => child.kill('SIGINT'),
  };
}

/** Collects a running command's stdout until `until` matches it, then stops the command. */
export async function readUntil(child: ChildProcess, until: RegExp): Promise<string> {
  const output = watchOutput(child);
  try {
    return await output.until(until);
  } finally {
    output.stop();
  }
}
